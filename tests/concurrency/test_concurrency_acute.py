"""Many annotators at once against a real uvicorn server with 2 workers: nothing over-assigned or lost.

Runs on SQLite (the study's dialeval.db) and on PostgreSQL (DIALEVAL_TEST_POSTGRES_URL).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx

from dialeval.store import work
from dialeval.study import open_study
from tests.e2e.conftest import start_server, stop_server
from tests.web.studies import make_acute_study

ANNOTATORS = 24
PER_PAIR = 4  # 3 bot pairs x 4 = 12 judgments wanted; 3 pairs x 9 conversation pairs = 27 units
COMPARISONS = 2


async def annotate(base: str, slug: str, n: int) -> dict:
    """One annotator: enter, then answer until done; every answer is sent twice at once (double click)."""
    result = {"answered": [], "errors": []}
    async with httpx.AsyncClient(base_url=base, timeout=60, follow_redirects=True) as c:
        r = await c.post(f"/s/{slug}/start", data={})
        csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
        await c.post(f"/s/{slug}/consent", data={"csrf": csrf, "agree": "yes"})
        r = await c.post(f"/s/{slug}/instructions", data={"csrf": csrf})
        for _ in range(COMPARISONS + 2):
            if r.url.path.endswith("/done"):
                break
            m = re.search(r'action="(/s/[^"]+/a/(\d+)/submit)"', r.text)
            if m is None:
                result["errors"].append(f"no form: {r.status_code} {r.text[:200]}")
                break
            data = {
                "csrf": csrf,
                "choice": str(1 + n % 2),
                "justification": f"annotator {n} thinks so",
                "request_id": uuid.uuid4().hex,
            }
            answers = await asyncio.gather(
                *[c.post(m.group(1), data=data, headers={"Accept": "application/json"}) for _ in range(2)]
            )
            if not all(a.status_code == 200 for a in answers):
                result["errors"].append([a.text for a in answers])
            result["answered"].append(int(m.group(2)))
            r = await c.get(f"/s/{slug}/task")
    return result


async def crowd(base: str, slug: str) -> list[dict]:
    return await asyncio.gather(*[annotate(base, slug, n) for n in range(ANNOTATORS)])


def run_crowd(folder):
    server = start_server([folder], workers=2)
    try:
        # in a thread: Playwright's sync API (browser tests in the same run) keeps an event loop running
        with ThreadPoolExecutor(1) as pool:
            results = pool.submit(lambda: asyncio.run(crowd(server.url, "acute-test"))).result()
    finally:
        stop_server(server)
    return results


def check(folder, results):
    assert not [r["errors"] for r in results if r["errors"]]
    answered = [a for r in results for a in r["answered"]]
    study = open_study(folder)
    try:
        ds = study.store.load_dataset(study.id)
        prefs = [j for j in ds.judgments if j.question == "preference"]
        assert len(prefs) == len(answered)  # no judgment lost, none doubled
        assert sorted(j.meta["assignment_id"] for j in prefs) == sorted(answered)
        per_unit = Counter(j.unit_id for j in prefs)
        assert max(per_unit.values()) == 1  # more unused pairs than wanted: each pair at most once
        per_pair = Counter(tuple(sorted((j.meta["winner_bot"], j.meta["loser_bot"]))) for j in prefs)
        assert per_pair == Counter({p: PER_PAIR for p in per_pair}) and len(per_pair) == 3
        per_annotator = Counter(j.annotator_id for j in prefs)
        assert max(per_annotator.values()) <= COMPARISONS
        conv_uses = Counter(c for j in prefs for c in (j.value["winner"], j.value["loser"]))
        assert max(conv_uses.values()) - min(conv_uses.values()) <= 1  # 24 uses of 9 conversations: even
        statuses = work.assignment_status_counts(study.store, study.id)
        assert statuses.get("assigned", 0) == 0
    finally:
        study.close()


def test_many_annotators_sqlite(tmp_path):
    folder = make_acute_study(tmp_path / "c", per_bot=3, onboarding=False, comparisons=COMPARISONS, per_pair=PER_PAIR)
    check(folder, run_crowd(folder))


def test_many_annotators_postgres(tmp_path, pg_url):
    folder = make_acute_study(
        tmp_path / "c", per_bot=3, onboarding=False, comparisons=COMPARISONS, per_pair=PER_PAIR, database=pg_url
    )
    check(folder, run_crowd(folder))
