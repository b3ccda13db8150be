"""SM-Turn + SM-Dialog through the real app on uvicorn, with real bots."""

from __future__ import annotations

import re

from dialeval.store import work

from .test_live_support import LiveClient, LiveServer, make_live_study


def stage(html: str) -> str:
    return re.search(r'data-stage="(\w+)"', html).group(1)


def test_full_conversation_checkboxes_and_likert(tmp_path):
    folder = make_live_study(
        tmp_path / "sm", "single-model", ["repeat", "eliza"], protocol={"bot_turns": 3, "conversations_per_bot": 5}
    )
    with LiveServer([folder]) as server:
        c = LiveClient(server)
        c.enter()
        assert stage(c.task().text) == "waiting"
        c.await_reply()
        ticks = [{"quality": ["engaging", "interesting"]}, {"none": "1"}, {"quality": "humanlike"}]
        for turn in (1, 2, 3):
            page = c.task()
            assert stage(page.text) == "check"
            r = c.act("send", {"text": "talking before ticking"})
            assert r.status_code == 400  # the qualities of the last message come first
            r = c.act("rate", {"turn": str(turn)})
            assert r.status_code == 400 and "none of these" in r.json()["error"]
            r = c.act("rate", {"turn": str(turn), "quality": "engaging", "none": "1"})
            assert r.status_code == 400
            assert c.act("rate", {"turn": str(turn), **ticks[turn - 1]}).status_code == 200
            if turn < 3:
                assert stage(c.task().text) == "chat"
                c.say(f"I enjoy painting landscapes, number {turn}")
        assert stage(c.task().text) == "final"
        r = c.act("final", {"engaging": "4", "humanlike": "6", "interesting": "2"})
        assert r.status_code == 400  # 6 is off the 1-5 scale
        r = c.act("final", {"engaging": "4", "humanlike": "2"})
        assert r.status_code == 400  # every question is needed
        r = c.act("final", {"engaging": "4", "humanlike": "2", "interesting": "5"})
        assert r.status_code == 200 and r.json()["done"] is True
        ds = server.store.load_dataset(server.study_id)
        turn_j = [j for j in ds.judgments if j.question == "turn"]
        assert [j.value for j in turn_j] == [
            {"turn": 1, "engaging": True, "humanlike": False, "interesting": True},
            {"turn": 2, "engaging": False, "humanlike": False, "interesting": False},
            {"turn": 3, "engaging": False, "humanlike": True, "interesting": False},
        ]
        dialog = [j for j in ds.judgments if j.question == "dialog"]
        assert [j.value for j in dialog] == [{"engaging": 4, "humanlike": 2, "interesting": 5}]
        conv = ds.conversation_map()[dialog[0].conversation_id]
        assert conv.source == "live" and len([t for t in conv.turns if t.speaker == "bot"]) == 3
        first_bot = conv.bots[0]
        # balanced scheduling: the next conversation is with the other bot; then nothing more
        page = c.task()
        nxt = work.get_assignment(server.store, c.assignment_id)
        assert nxt.payload["bot"] != first_bot
        assert stage(page.text) == "waiting"


def test_scheduling_balances_bots_and_caps_one_conversation_per_bot(tmp_path):
    folder = make_live_study(
        tmp_path / "sm", "single-model", ["repeat", "eliza"], protocol={"bot_turns": 1, "conversations_per_bot": 2}
    )
    with LiveServer([folder]) as server:
        clients = [LiveClient(server) for _ in range(4)]
        bots = []
        for c in clients:
            c.enter()
            c.task()
            bots.append(work.get_assignment(server.store, c.assignment_id).payload["bot"])
        assert sorted(bots) == ["eliza", "eliza", "repeat", "repeat"]
        # a fifth annotator finds every bot at its target
        extra = LiveClient(server)
        extra.enter()
        assert extra.task().url.path.endswith("/done")


def test_two_studies_served_together_never_share_a_bot_reply(tmp_path):
    """Each study folder has its own database, so every study one process serves is study 1 there and
    its first live chat is "live-1": the key of a bot reply must still differ between the studies,
    else an annotator of one study joins (and watches) the reply running in the other."""
    a = make_live_study(tmp_path / "a", "single-model", ["repeat"], protocol={"bot_turns": 2}, name="study a")
    b = make_live_study(tmp_path / "b", "single-model", ["eliza"], protocol={"bot_turns": 2}, name="study b")
    with LiveServer([a, b]) as server:
        keys, replies = [], []
        for slug, served in server.app.state.studies.items():
            c = LiveClient(server)
            c.url = lambda path="", slug=slug: f"/s/{slug}/{path}"
            c.enter()
            c.task()
            assert c.assignment_id == 1 and served.ctx.study_id == 1  # the same ids in both databases
            r = c.act("reply")
            assert r.status_code == 200, r.text
            keys.append(r.json()["generation"])
            events = c.follow(generation=keys[-1])
            replies.append("".join(e.get("text", "") for e in events if e.get("event") == "chunk"))
            stored = served.ctx.store.load_dataset(served.ctx.study_id).conversations[0]
            assert stored.bots == [served.ctx.config.bots[0].name]
            c.close()
        assert keys[0] != keys[1], keys
        assert all(str(tmp_path) not in k for k in keys)  # the page never sees the folder
