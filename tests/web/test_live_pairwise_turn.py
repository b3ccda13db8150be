"""PW-Turn through the real app on uvicorn (httpx), with real bots (repeat in echo mode, eliza)."""

from __future__ import annotations

import re

from dialeval.protocols import onboarding_content as onb
from dialeval.store import work

from .test_live_support import LiveClient, LiveServer, make_live_study


def stage(html: str) -> str:
    return re.search(r'data-stage="(\w+)"', html).group(1)


def onboarding_answers(server, client, right: bool = True) -> dict:
    state = work.get_assignment(server.store, client.assignment_id).state
    answers = {}
    for k, (step, order) in enumerate(zip(onb.STEPS, state["onboarding_orders"])):
        good = order.index(step.good)
        answers[f"step{k}"] = str(good if right or k else 1 - good)  # wrong: the first step is wrong
    return answers


def pw_study(tmp_path, **kw):
    return make_live_study(
        tmp_path / "pw",
        "pairwise-turn",
        ["repeat", "eliza"],
        protocol={"bot_turns": kw.pop("bot_turns", 3), "conversations_per_pair": 5},
        onboarding={"enabled": True, "tries": 2, "on_fail": kw.pop("on_fail", "block")},
        **kw,
    )


def test_full_conversation_both_bots_answer_and_choice_continues(tmp_path):
    with LiveServer([pw_study(tmp_path)]) as server:
        c = LiveClient(server)
        c.enter()
        page = c.task()
        assert stage(page.text) == "onboarding"
        assert c.act("onboarding", onboarding_answers(server, c)).json()["onboarding"] == "passed"
        page = c.task()
        assert stage(page.text) == "waiting"
        state = work.get_assignment(server.store, c.assignment_id).state
        assert all(p in page.text for p in state["persona"])  # the two persona sentences are shown
        c.await_reply()
        for turn in (1, 2, 3):
            page = c.task()
            assert stage(page.text) == "choose"
            pending = work.get_assignment(server.store, c.assignment_id).state["pending"]
            assert pending["turn"] == turn and sorted(pending["order"]) == ["eliza", "repeat"]
            texts = [cand["text"] for cand in pending["candidates"]]
            assert page.text.index(texts[0]) < page.text.index(texts[1])  # shown in the stored order
            # the justification is checked by the server
            r = c.act("choose", {"turn": str(turn), "choice": "0", "justification": ""})
            assert r.status_code == 400 and "explain" in r.json()["error"]
            echo = pending["order"].index("repeat")
            r = c.act("choose", {"turn": str(turn), "choice": str(echo), "justification": "it answers me"})
            assert r.status_code == 200, r.text
            if turn < 3:
                assert stage(c.task().text) == "chat"
                c.say(f"my message number {turn}")
        assert r.json()["done"] is True
        ds = server.store.load_dataset(server.study_id)
        judgments = [j for j in ds.judgments if j.question == "preference"]
        assert [j.value for j in judgments] == [{"turn": t, "chosen": "repeat", "other": "eliza"} for t in (1, 2, 3)]
        assert all(j.justification == "it answers me" and j.conversation_id == "live-1" for j in judgments)
        conv = ds.conversation_map()["live-1"]
        bot_turns = [t for t in conv.turns if t.speaker == "bot"]
        assert [t.bot for t in bot_turns] == ["repeat"] * 3
        for t, j in zip(bot_turns, judgments):
            assert {c["bot"] for c in t.candidates} == {"repeat", "eliza"}
            assert t.candidates[t.chosen]["bot"] == "repeat" and t.text == t.candidates[t.chosen]["text"]
            assert j.shown_order == [c["bot"] for c in t.candidates]
        # both bots continued from the shared history: the echo bot echoed the annotator's message
        assert bot_turns[1].text == "You said: my message number 1"
        assert conv.turns[0].text == "Hi!" and conv.turns[0].meta["fixed"] is True
        # one conversation per annotator per pair and question: nothing more for this annotator
        assert c.task().url.path.endswith("/done")


def test_onboarding_two_tries_then_block(tmp_path):
    with LiveServer([pw_study(tmp_path)]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        r = c.act("onboarding", onboarding_answers(server, c, right=False))
        assert r.json()["onboarding"] == "retry"
        page = c.task()
        assert "3 of 4 answers were right" in page.text
        r = c.act("onboarding", onboarding_answers(server, c, right=False))
        assert r.json()["onboarding"] == "failed"
        ann = work.get_annotator(server.store, 1)
        assert ann.status == "blocked" and "onboarding_failed" in ann.qc["reasons"]
        assert c.task().url.path.endswith("/done")
        onboarding = [j for j in server.store.load_dataset(server.study_id).judgments if j.question == "onboarding"]
        assert [j.value["passed"] for j in onboarding] == [False, False]


def test_onboarding_fail_flag_lets_the_annotator_continue(tmp_path):
    with LiveServer([pw_study(tmp_path, on_fail="flag")]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        for _ in range(2):
            c.task()  # each try shows the pairs in a new order
            c.act("onboarding", onboarding_answers(server, c, right=False))
        assert work.get_annotator(server.store, 1).status == "flagged"
        assert stage(c.task().text) == "waiting"


def test_send_is_refused_while_a_choice_is_pending(tmp_path):
    with LiveServer([pw_study(tmp_path)]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        c.act("onboarding", onboarding_answers(server, c))
        c.task()
        c.await_reply()
        r = c.act("send", {"text": "skipping the choice"})
        assert r.status_code == 400 and "choose" in r.json()["error"]
        conv = server.store.get_conversation(server.study_id, "live-1")
        assert [t.speaker for t in conv.turns] == ["human"]  # nothing stored, the Hi! only
