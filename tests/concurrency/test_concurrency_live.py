"""Several annotators chat at the same time with the live methods, on SQLite and on PostgreSQL:
no unit is given out beyond its target and no judgment is lost. Real app on uvicorn, real bots."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from dialeval.store import work
from tests.web.test_live_support import LiveClient, LiveServer, make_live_study

ANNOTATORS = 8


def sm_session(server: LiveServer, bot_turns: int) -> str | None:
    c = LiveClient(server)
    try:
        c.enter()
        page = c.task()
        if page.url.path.endswith("/done"):
            return None
        c.await_reply()
        for turn in range(1, bot_turns + 1):
            assert c.act("rate", {"turn": str(turn), "quality": "engaging"}).status_code == 200
            if turn < bot_turns:
                c.say(f"my hobby is woodworking, message {turn}")
        r = c.act("final", {"engaging": "3", "humanlike": "3", "interesting": "3"})
        assert r.status_code == 200 and r.json()["done"] is True, r.text
        return work.get_assignment(server.store, c.assignment_id).payload["bot"]
    finally:
        c.close()


def pw_session(server: LiveServer, bot_turns: int) -> str | None:
    c = LiveClient(server)
    try:
        c.enter()
        page = c.task()
        if page.url.path.endswith("/done"):
            return None
        c.await_reply()
        for turn in range(1, bot_turns + 1):
            r = c.act("choose", {"turn": str(turn), "choice": "0", "justification": "reads better to me"})
            assert r.status_code == 200, r.text
            if turn < bot_turns:
                c.say(f"I collect old maps, message {turn}")
        return work.get_assignment(server.store, c.assignment_id).unit_external_id
    finally:
        c.close()


def run_concurrently(server: LiveServer, session, bot_turns: int) -> list:
    with ThreadPoolExecutor(ANNOTATORS) as pool:
        return list(pool.map(lambda _: session(server, bot_turns), range(ANNOTATORS)))


def check_single_model(server: LiveServer, results: list, per_bot: int, bot_turns: int) -> None:
    done = [r for r in results if r is not None]
    assert sorted(done) == sorted(["repeat", "eliza"] * per_bot)  # exactly the target, balanced
    with server.store.session() as s:
        load = work.unit_load(s, server.study_id)
    assert all(v["submitted"] <= per_bot and v["assigned"] == 0 for v in load.values())
    ds = server.store.load_dataset(server.study_id)
    assert len([j for j in ds.judgments if j.question == "turn"]) == len(done) * bot_turns
    assert len([j for j in ds.judgments if j.question == "dialog"]) == len(done)
    for conv in ds.conversations:
        speakers = [t.speaker for t in conv.turns]
        assert speakers == ["human", "bot"] * bot_turns  # no lost or doubled turn


def sm_folder(tmp_path, database: str | None = None):
    return make_live_study(
        tmp_path / "sm",
        "single-model",
        ["repeat", "eliza"],
        database=database,
        name=f"sm-conc-{uuid.uuid4().hex[:8]}",
        annotation={"units_per_annotator": 1},
        protocol={"bot_turns": 2, "conversations_per_bot": 3},
    )


def pw_folder(tmp_path, database: str | None = None):
    return make_live_study(
        tmp_path / "pw",
        "pairwise-turn",
        ["repeat", "eliza", "retrieval"],
        database=database,
        name=f"pw-conc-{uuid.uuid4().hex[:8]}",
        onboarding={"enabled": False},
        annotation={"units_per_annotator": 1},
        protocol={"bot_turns": 2, "conversations_per_pair": 2},
    )


def check_pairwise(server: LiveServer, results: list, per_pair: int, bot_turns: int) -> None:
    done = [r for r in results if r is not None]
    assert len(done) == 3 * per_pair  # three pairs x target; the other annotators find no work
    assert all(done.count(u) == per_pair for u in set(done))
    ds = server.store.load_dataset(server.study_id)
    prefs = [j for j in ds.judgments if j.question == "preference"]
    assert len(prefs) == len(done) * bot_turns
    by_conv: dict[str, list[int]] = {}
    for j in prefs:
        by_conv.setdefault(j.conversation_id, []).append(j.value["turn"])
    assert all(sorted(v) == list(range(1, bot_turns + 1)) for v in by_conv.values())


def test_single_model_concurrent_sqlite(tmp_path):
    with LiveServer([sm_folder(tmp_path)]) as server:
        check_single_model(server, run_concurrently(server, sm_session, 2), 3, 2)


def test_pairwise_turn_concurrent_sqlite(tmp_path):
    with LiveServer([pw_folder(tmp_path)]) as server:
        check_pairwise(server, run_concurrently(server, pw_session, 2), 2, 2)


@pytest.mark.postgres
def test_single_model_concurrent_postgres(tmp_path, pg_url):
    with LiveServer([sm_folder(tmp_path, pg_url)]) as server:
        check_single_model(server, run_concurrently(server, sm_session, 2), 3, 2)


@pytest.mark.postgres
def test_pairwise_turn_concurrent_postgres(tmp_path, pg_url):
    with LiveServer([pw_folder(tmp_path, pg_url)]) as server:
        check_pairwise(server, run_concurrently(server, pw_session, 2), 2, 2)
