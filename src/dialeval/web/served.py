"""A served study: its context, protocol and secrets, opened once per process; how its hooks run.

`create_app` keeps one `ServedStudy` per study folder in ``app.state.studies`` (by URL slug); the
routes receive theirs through the `served_study` dependency (web/deps.py).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anyio import from_thread
from starlette.concurrency import run_in_threadpool

from ..asyncrun import run_blocking
from ..errors import DialevalError
from ..protocols import get_protocol
from ..protocols.base import Protocol, StudyContext
from .auth import CookieSigner, load_admin_token, load_secret
from .ratelimit import DatabaseRateLimiter, RateLimiter


@dataclass
class ServedStudy:
    ctx: StudyContext
    protocol: Protocol | None
    secret: str
    admin_token: str
    signer: CookieSigner
    limiter: DatabaseRateLimiter | RateLimiter
    error: str | None = None  # why the study's pages are not available (protocol is None)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def slug(self) -> str:
        return self.ctx.slug


def slugify(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return slug[:60] or "study"


def open_served(folder: Path, slugs: set[str]) -> ServedStudy:
    """Open the study of `folder` under a slug not yet in `slugs` (which it joins)."""
    from ..study import open_study

    study = open_study(folder)
    slug = base = slugify(study.config.name)
    n = 2
    while slug in slugs:
        slug, n = f"{base}-{n}", n + 1
    slugs.add(slug)
    ctx = StudyContext(folder=study.folder, config=study.config, store=study.store, study_id=study.id, slug=slug)
    secret = load_secret(study.folder, study.store, study.id)
    served = ServedStudy(
        ctx=ctx,
        protocol=None,
        secret=secret,
        admin_token=load_admin_token(study.folder, study.store, study.id),
        signer=CookieSigner(secret, slug),
        limiter=DatabaseRateLimiter(study.store, f"study{study.id}", rate=0.5, burst=6),
    )
    try:
        served.protocol = get_protocol(study.config.method)(ctx)
    except DialevalError as exc:
        served.error = str(exc)
    return served


async def call(fn, *args, **kwargs):
    """Await an async hook, run a plain one in a worker thread (blocking DB work is fine there)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    result = await run_in_threadpool(fn, *args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def hook_in_thread(fn):
    """`fn` to call from a worker thread of run_in_threadpool: a plain hook as it is; an async one
    runs on the event loop (anyio.from_thread), where its clients and locks live."""
    if not inspect.iscoroutinefunction(fn):
        return fn
    return lambda *args: from_thread.run(fn, *args)


def run_hook_blocking(fn, *args):
    """Run a sync or async hook to completion from sync code (even inside a running event loop)."""
    if not inspect.iscoroutinefunction(fn):
        return fn(*args)
    return run_blocking(lambda: fn(*args))  # also under Playwright's sync API, which keeps a loop running
