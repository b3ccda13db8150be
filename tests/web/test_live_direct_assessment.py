"""Direct Assessment through the real app on uvicorn: topics, >= min_inputs enforced, sliders, QC."""

from __future__ import annotations

import re

from dialeval.methods.direct_assessment.protocol import qc_status
from dialeval.methods.direct_assessment.questions import DA_STATEMENTS
from dialeval.plugin import StudyStore
from dialeval.records import DA_CRITERIA
from dialeval.store import work

from .test_live_support import LiveClient, LiveServer, make_live_study


def stage(html: str) -> str:
    return re.search(r'data-stage="(\w+)"', html).group(1)


def da_study(tmp_path, topic="free", min_inputs=3):
    return make_live_study(
        tmp_path / "da",
        "direct-assessment",
        ["repeat", "eliza", "qc"],
        protocol={"min_inputs": min_inputs, "qc_bot": "qc", "topic": topic},
    )


GOOD = {"robotic": 20, "interesting": 80, "fun": 75, "consistent": 85, "fluent": 90, "repetitive": 10, "topic": 80}
BAD = {"robotic": 95, "interesting": 5, "fun": 10, "consistent": 3, "fluent": 8, "repetitive": 90, "topic": 2}


def chat(c, n: int) -> None:
    for k in range(n):
        c.say(f"I have been learning to cook Thai food, message {k}")


def test_hit_of_every_bot_plus_qc_in_blind_order(tmp_path):
    with LiveServer([da_study(tmp_path)]) as server:
        c = LiveClient(server)
        c.enter()
        page = c.task()
        assert stage(page.text) == "topic"
        a = work.get_assignment(server.store, c.assignment_id)
        assert sorted(a.shown_order) == ["eliza", "qc", "repeat"]
        for position, bot in enumerate(a.shown_order, start=1):
            page = c.task()
            assert stage(page.text) == "topic" and f"Conversation {position} of 3" in page.text
            assert bot not in re.sub(r"<[^>]+>", " ", page.text).split()  # blind: no bot name on the page
            r = c.act("start_chat", {"topic": "", "opinion": "like"})
            assert r.status_code == 400
            r = c.act("start_chat", {"topic": "cooking", "opinion": "meh"})
            assert r.status_code == 400
            assert c.act("start_chat", {"topic": "cooking", "opinion": "like"}).status_code == 200
            assert stage(c.task().text) == "chat"
            chat(c, 2)
            assert c.act("topic", {"topic": "travel"}).status_code == 200
            # finishing before min_inputs is refused by the server
            r = c.act("end_chat")
            assert r.status_code == 400 and "at least 3" in r.json()["error"]
            chat(c, 1)
            assert c.act("end_chat").status_code == 200
            page = c.task()
            assert stage(page.text) == "rate"
            assert all(DA_STATEMENTS[k] in page.text.replace("&#39;", "'") for k in DA_CRITERIA)
            assert "strongly disagree" in page.text and "strongly agree" in page.text
            assert ">Robotic<" not in page.text and ">robotic<" not in page.text
            values = BAD if bot == "qc" else GOOD
            bad = {**values, "fun": 150}
            r = c.act("rate", {"position": str(position), **bad})
            assert r.status_code == 400 and "between 0 and 100" in r.json()["error"]
            r = c.act("rate", {"position": str(position), **{k: v for k, v in values.items() if k != "topic"}})
            assert r.status_code == 400
            r = c.act("rate", {"position": str(position), **{k: str(v) for k, v in values.items()}})
            assert r.status_code == 200, r.text
        assert r.json()["done"] is True
        ds = server.store.load_dataset(server.study_id)
        ratings = [j for j in ds.judgments if j.question == "ratings"]
        assert len(ratings) == 3
        convs = ds.conversation_map()
        for j, bot in zip(ratings, a.shown_order):
            conv = convs[j.conversation_id]
            assert conv.bots == [bot] and conv.meta["qc"] == (bot == "qc")
            assert j.value == (BAD if bot == "qc" else GOOD)  # raw slider positions, not reversed
            assert conv.meta["topic"] == "cooking" and conv.meta["opinion"] == "like"
            assert [c["topic"] for c in conv.meta["topic_changes"]] == ["travel"]
            assert len([t for t in conv.turns if t.speaker == "human"]) == 3
        status = qc_status(StudyStore(server.store, server.study_id), 1)
        assert status["n_qc"] == 1 and status["n_ordinary"] == 2
        assert status["passed"] is True and status["p"] < 0.05
        # the analysis reads these judgments as they are
        from dialeval.methods.direct_assessment.analysis import judgments_frame

        frame = judgments_frame(ds)
        assert frame["is_qc"].sum() == 1 and set(frame["system"]) == {"repeat", "eliza", "qc"}


def test_icebreaker_topic_is_a_persona_sentence(tmp_path):
    with LiveServer([da_study(tmp_path, topic="icebreaker", min_inputs=1)]) as server:
        c = LiveClient(server)
        c.enter()
        page = c.task()
        state = work.get_assignment(server.store, c.assignment_id).state
        ice = state["persona0"]["icebreaker"]
        assert ice in page.text.replace("&#39;", "'")
        assert c.act("start_chat", {"opinion": "ambivalent"}).status_code == 200
        conv = server.store.get_conversation(server.study_id, f"live-{c.assignment_id}-1")
        assert conv.meta["topic"] == ice and ice in conv.meta["bot_persona"]


def test_qc_status_fails_an_annotator_who_rates_the_qc_bot_alike(tmp_path):
    with LiveServer([da_study(tmp_path, min_inputs=1)]) as server:
        c = LiveClient(server)
        c.enter()
        for position in (1, 2, 3):
            c.task()
            c.act("start_chat", {"topic": "music", "opinion": "dislike"})
            chat(c, 1)
            c.act("end_chat")
            assert c.act("rate", {"position": str(position), **GOOD}).status_code == 200
        status = qc_status(StudyStore(server.store, server.study_id), 1)
        assert status["passed"] is False and status["p"] >= 0.05
        summary = server.served.protocol.admin_summary()
        assert {"label": "annotators passing the QC test", "value": "0 of 1"} in summary.headline
