"""The live chat engine shared by the three methods: bot errors and Retry, streaming, resume after a
refresh, XSS, message rate limiting and the worker message filters. Real app on uvicorn, real bots;
the failing bot is an `openai` bot pointed at a loopback server answering 500."""

from __future__ import annotations

import math
import re

import pytest

from dialeval.errors import JudgmentError
from dialeval.protocols.live import watch_timeout
from dialeval.store import work
from tests.bots.fake_openai_server import start_fake_openai

from .test_live_support import LiveClient, LiveServer, make_live_study


def stage(html: str) -> str:
    return re.search(r'data-stage="(\w+)"', html).group(1)


def openai_bot(url: str) -> dict:
    return {
        "name": "remote",
        "type": "openai",
        "options": {"base_url": str(url), "model": "fake", "retries": 0, "timeout": 10},
    }


def test_bot_error_keeps_the_conversation_and_retry_asks_again(tmp_path):
    with start_fake_openai(mode="flaky", fail_first=2) as url:
        folder = make_live_study(tmp_path / "sm", "single-model", [openai_bot(url)], protocol={"bot_turns": 2})
        with LiveServer([folder]) as server:
            c = LiveClient(server)
            c.enter()
            c.task()
            events = c.await_reply()  # the opening "Hi!" -> 500
            errors = [e for e in events if e["event"] == "error"]
            # neutral: the bot's name and error stay on the server (log, admin page)
            assert errors and errors[0]["message"] == "Your partner could not answer; try again."
            assert errors[0]["retry"] is True
            page = c.task()  # a refresh shows the error with its Retry button, conversation kept
            assert stage(page.text) == "waiting" and "data-retry" in page.text
            assert "could not answer" in page.text and 'id="bot-error" role="alert" hidden' not in page.text
            conv = server.store.get_conversation(server.study_id, f"live-{c.assignment_id}")
            assert [t.text for t in conv.turns] == ["Hi!"]
            events = c.await_reply()  # Retry: fails once more (fail_first=2)
            assert events[-1]["event"] == "error"
            events = c.await_reply()  # and then works, with the same history
            assert events[-1]["event"] == "done"
            assert [b["messages"][-1]["content"] for b in url.state.bodies] == ["Hi!"] * 3
            conv = server.store.get_conversation(server.study_id, f"live-{c.assignment_id}")
            assert [t.speaker for t in conv.turns] == ["human", "bot"] and conv.turns[1].text == "reply to: Hi!"
            kinds = [e for e in _events(server) if e == "bot-error"]
            assert len(kinds) == 2


def _events(server) -> list[str]:
    from sqlalchemy import select

    from dialeval.store.schema import EventRow

    with server.store.session() as s:
        return list(s.scalars(select(EventRow.kind).order_by(EventRow.id)))


def test_annotator_message_is_stored_before_the_bot_is_asked(tmp_path):
    with start_fake_openai(mode="error500") as url:
        folder = make_live_study(
            tmp_path / "da",
            "direct-assessment",
            [openai_bot(url), {"name": "qc", "type": "degraded", "options": {"seed": 1}}],
            protocol={"min_inputs": 2},
        )
        with LiveServer([folder]) as server:
            c = LiveClient(server)
            c.enter()
            c.task()
            c.act("start_chat", {"topic": "gardening", "opinion": "like"})
            a = work.get_assignment(server.store, c.assignment_id)
            if a.shown_order[0] != "remote":  # talk to the failing bot
                return _skip_to_remote(c, server, a)
            events = c.say("Do you grow vegetables at home?")
            assert events[-1]["event"] == "error"
            conv = server.store.get_conversation(server.study_id, f"live-{c.assignment_id}-1")
            assert [t.text for t in conv.turns] == ["Do you grow vegetables at home?"]


def _skip_to_remote(c, server, a):
    # the QC bot came first: chat with it, rate, then reach the failing bot
    c.say("Do you like tomatoes and peppers?")
    c.say("I grow them every summer on my balcony.")
    c.act("end_chat")
    c.act(
        "rate",
        {
            "position": "1",
            "robotic": 50,
            "interesting": 50,
            "fun": 50,
            "consistent": 50,
            "fluent": 50,
            "repetitive": 50,
            "topic": 50,
        },
    )
    c.task()
    c.act("start_chat", {"topic": "gardening", "opinion": "like"})
    events = c.say("Do you grow vegetables at home?")
    assert events[-1]["event"] == "error"
    conv = server.store.get_conversation(server.study_id, f"live-{c.assignment_id}-2")
    assert [t.text for t in conv.turns] == ["Do you grow vegetables at home?"]


def test_streamed_reply_arrives_in_chunks(tmp_path):
    with start_fake_openai(mode="slow", delay=0.5, reply="one two three four five") as url:
        folder = make_live_study(tmp_path / "sm", "single-model", [openai_bot(url)], protocol={"bot_turns": 2})
        with LiveServer([folder]) as server:
            c = LiveClient(server)
            c.enter()
            c.task()
            events = c.await_reply()
            chunks = [e["text"] for e in events if e["event"] == "chunk"]
            assert len(chunks) == 5 and "".join(chunks) == "one two three four five"
            assert events[-1]["event"] == "done"


def test_refresh_resumes_exactly(tmp_path):
    folder = make_live_study(
        tmp_path / "pw", "pairwise-turn", ["repeat", "eliza"], protocol={"bot_turns": 3}, onboarding={"enabled": False}
    )
    with LiveServer([folder]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        c.await_reply()
        first = c.task().text
        assert stage(first) == "choose"
        again = c.task().text  # a refresh: same candidates, same order, same transcript
        cand = lambda html: re.findall(r'<div class="text">(.*?)</div>', html)
        assert cand(first) == cand(again) and len(cand(first)) == 2
        # a second client with the same cookies (another tab) sees the same page
        other = LiveClient(server)
        other.http.cookies = c.http.cookies
        other.csrf = c.csrf
        assert cand(other.task().text) == cand(first)
        c.act("choose", {"turn": "1", "choice": "1", "justification": "more natural reply"})
        r = c.act("send", {"text": "I like sailing on the lake"})  # the reply is made in the background
        assert r.status_code == 200
        # wait for it through the server's own long-poll (event-driven, no wall-clock polling);
        # `finished` comes once the reply is stored, whether it ended before or during this watch
        events = c.follow(generation=r.json()["generation"])
        assert events[-1]["event"] == "done"
        page = c.task().text
        assert stage(page) == "choose" and "I like sailing on the lake" in page


def test_bot_reply_with_script_is_shown_as_text(tmp_path):
    folder = make_live_study(tmp_path / "sm", "single-model", ["repeat"], protocol={"bot_turns": 2})
    with LiveServer([folder]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        c.await_reply()
        c.act("rate", {"turn": "1", "none": "1"})
        c.say('<script>alert("x")</script><img src=x onerror=alert(1)>')
        page = c.task().text
        assert "<script>alert" not in page and "<img src=x" not in page
        assert 'You said: &lt;script&gt;alert("x")&lt;/script&gt;&lt;img src=x' in page  # text, as Markdown shows it


class ManualClock:
    """A clock that moves only when the test says so (the rate limiter's `clock`)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_chat_messages_are_rate_limited(tmp_path):
    folder = make_live_study(tmp_path / "sm", "single-model", ["repeat"], protocol={"bot_turns": 20})
    with LiveServer([folder], fast_limits=False) as server:
        clock = ManualClock()
        limiter = server.served.limiter  # the app's own limit (0.5 message/s, bursts of 6), on our clock
        limiter.clock = clock
        c = LiveClient(server)
        c.enter()
        c.task()
        c.await_reply()

        def send(k: int):
            c.act("rate", {"turn": str(k + 1), "none": "1"})
            return c.act("send", {"text": f"message number {k} for you"})

        codes = []
        for k in range(7):
            r = send(k)
            codes.append(r.status_code)
            if r.status_code == 200:  # the bot's reply to this message ends before the next one
                c.follow(generation=r.json().get("generation"))
        assert codes == [200] * 6 + [429]  # a burst of 6, however slowly the machine runs
        assert "too fast" in r.json()["error"] and r.headers["Retry-After"] == "2"  # 1 token at 0.5/s
        clock.now += 1.9
        assert send(6).status_code == 429  # not refilled yet
        clock.now += 0.1
        r = send(6)
        assert r.status_code == 200  # one token back after 2 s
        c.follow(generation=r.json().get("generation"))
        assert send(7).status_code == 429


def test_watch_rejects_a_malformed_timeout(tmp_path):
    with start_fake_openai(mode="slow", delay=1.0) as url:
        folder = make_live_study(tmp_path / "sm", "single-model", [openai_bot(url)], protocol={"bot_turns": 2})
        with LiveServer([folder]) as server:
            c = LiveClient(server)
            c.enter()
            c.task()
            r = c.act("reply")  # the opening reply is being generated (the bot takes 1 s)
            assert r.status_code == 200
            c.generation = r.json()["generation"]
            for bad in ({}, {"s": 1}, [5], "soon", True, -1):
                r = c.act("watch", {"cursor": 0, "generation": c.generation, "timeout": bad})
                assert r.status_code == 400, (bad, r.status_code, r.text)
                assert r.json()["ok"] is False and "timeout must be a number of seconds" in r.json()["error"]
            for good in (0.01, "0.01"):
                r = c.act("watch", {"cursor": 0, "generation": c.generation, "timeout": good})
                assert r.status_code == 200 and {"events", "cursor", "finished"} <= set(r.json())
            assert c.follow()[-1]["event"] == "done"  # the annotator's chat went on untouched


def test_watch_timeout_values():
    assert watch_timeout(None) == 20.0 and watch_timeout(0) == 0.0 and watch_timeout(1e9) == 20.0
    assert watch_timeout("") == 20.0 and watch_timeout("1.5") == 1.5
    for bad in (math.nan, -0.5, "nan", "-1", "soon", {}, [], True, None.__class__):
        with pytest.raises(JudgmentError, match="timeout must be a number"):
            watch_timeout(bad)


def test_worker_filters_flag_the_annotator_when_the_chat_ends(tmp_path):
    folder = make_live_study(tmp_path / "sm", "single-model", ["repeat"], protocol={"bot_turns": 3})
    with LiveServer([folder]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        c.await_reply()
        for turn, text in enumerate(["HELLO THERE", "OK", "HELLO THERE"], start=1):
            c.act("rate", {"turn": str(turn), "none": "1"})
            if turn < 3:
                c.say(text)
        c.act("rate", {"turn": "3", "none": "1"})
        assert work.get_annotator(server.store, 1).status == "active"  # nothing is judged mid-chat
        assert c.act("final", {"engaging": "1", "humanlike": "1", "interesting": "1"}).status_code == 200
        ann = work.get_annotator(server.store, 1)
        assert ann.status == "flagged"
        assert {"short_messages", "greeting_first", "all_caps"} <= set(ann.qc["reasons"])
        ds = server.store.load_dataset(server.study_id)
        assert len([j for j in ds.judgments if j.annotator_id == ds.annotators[0].id]) == 4  # kept
