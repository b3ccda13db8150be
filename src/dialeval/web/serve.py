"""`serve`: prepare the studies' units, print the links, run uvicorn (several stateless workers)."""

from __future__ import annotations

import os
import socket
import threading
import webbrowser
from pathlib import Path
from typing import Any

from ..study import no_tasks_reason
from .app import STUDY_FOLDERS_ENV


def study_links(app, host: str, port: int) -> list[dict[str, str]]:
    """Annotator, Prolific, MTurk, volunteer and admin links of every served study."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    base = f"http://{shown}:{port}"
    out = []
    for served in app.state.studies.values():
        url = f"{base}/s/{served.slug}/"
        out.append(
            {
                "study": served.ctx.config.name,
                "method": served.ctx.method,
                "annotator": url,
                "volunteer": url + "?volunteer=1",
                "prolific": url
                + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
                "mturk": url + "  (ExternalQuestion: MTurk adds workerId, assignmentId, hitId, turkSubmitTo)",
                "admin": f"{base}/s/{served.slug}/admin?token={served.admin_token}",
                "error": served.error or "",
                "completion_warning": completion_warning(served.ctx.config.recruitment) or "",
                "tasks_warning": (
                    no_tasks_reason(served.ctx.store, served.ctx.study_id, served.ctx.config, served.ctx.folder)
                    if served.protocol is not None
                    else None
                )
                or "",
            }
        )
    return out


PLACEHOLDER = "REPLACE-"  # the start of `init`'s completion code placeholder


def completion_warning(recruitment) -> str | None:
    """What is wrong with a Prolific study's completion code, in one line (None: nothing)."""
    code = recruitment.completion_code
    if code and code.upper().startswith(PLACEHOLDER):
        return (
            f"recruitment.completion_code is still the placeholder '{code}': paste your Prolific study's "
            "completion code into study.yaml"
        )
    if recruitment.platform in ("prolific", "link") and not code:  # the Prolific link above works either way
        return (
            "no recruitment.completion_code in study.yaml: a worker coming by the prolific link gets a code of "
            "their own, which Prolific cannot check, and is not sent back to Prolific; paste your Prolific "
            "study's completion code there before using that link"
        )
    return None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


GRACEFUL_SHUTDOWN_S = 10  # on SIGTERM, requests in flight get this long to finish
KEEP_ALIVE_S = 30  # seconds an idle keep-alive connection stays open (see serve)


def serve(
    study_folders: list[Path],
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    open_browser: bool = False,
    print_fn=print,
    db_connections: int | None = None,
    access_log: bool = False,
) -> None:
    """Serve the study folders. With workers > 1 uvicorn starts N processes from an app factory.

    `db_connections`: the database connections this server may open in all (default: the
    PostgreSQL server's max_connections minus a reserve), shared equally by the workers.
    `access_log`: one line per request (method, path, status, ms, hashed annotator id) on stderr.
    """
    import uvicorn

    from ..store.engine import POOL_SIZE_ENV, connection_budget
    from .app import ACCESS_LOG_ENV, create_app

    folders = [Path(f).resolve() for f in study_folders]
    if access_log:
        os.environ[ACCESS_LOG_ENV] = "1"
    app = create_app(folders, prepare=True)  # builds units once, stores the shared secrets
    per_worker = min(connection_budget(s.ctx.store.engine, workers, db_connections) for s in app.state.studies.values())
    os.environ[POOL_SIZE_ENV] = str(per_worker)  # read by every worker's engine
    print_fn(
        f"dialeval: serving {len(folders)} stud{'y' if len(folders) == 1 else 'ies'} on http://{host}:{port}/ "
        f"({workers} worker{'s' if workers > 1 else ''}, up to {per_worker} database connections each)"
    )
    for link in study_links(app, host, port):
        print_fn(f"\n  {link['method']}: {link['study']}")
        if link["error"]:
            print_fn(f"    not available: {link['error']}")
            continue
        for key in ("annotator", "volunteer", "prolific", "mturk", "admin"):
            print_fn(f"    {key:<10} {link[key]}")
        for warning in (link["tasks_warning"], link["completion_warning"]):
            if warning:
                print_fn(f"    warning: {warning}")
    if open_browser:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        threading.Timer(1.0, webbrowser.open, args=(f"http://{shown}:{port}/",)).start()
    # log level info: uvicorn then logs worker starts, deaths ("Child process [pid] died") and
    # respawns; its own access log stays off (ours hashes the annotator id).
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": "info",
        "access_log": False,
        "proxy_headers": True,
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S,
        # An idle connection is kept longer than clients keep theirs in their pools (httpx 5 s,
        # aiohttp 15 s): with uvicorn's 5 s both ends timed out together and a client could send its
        # next request on a socket the server was closing ("Server disconnected without sending a
        # response", seen in load runs of 200 annotators).
        "timeout_keep_alive": KEEP_ALIVE_S,
    }
    for served in app.state.studies.values():
        served.ctx.store.close()
    if workers > 1:
        os.environ[STUDY_FOLDERS_ENV] = os.pathsep.join(map(str, folders))
        uvicorn.run("dialeval.web.app:app_from_env", factory=True, workers=workers, **options)
    else:
        uvicorn.run(app_for_one_process(folders), **options)


def app_for_one_process(folders: list[Path]):
    """The app of a one-process server, opened with the pool size serve chose."""
    from .app import create_app

    return create_app(folders, prepare=False, warm=True)
