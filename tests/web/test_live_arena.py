"""The live arena battle through the real app on uvicorn (httpx), with real bots (repeat in echo mode, eliza)."""

from __future__ import annotations

import re

import pytest

from dialeval import clock
from dialeval.config import parse_study
from dialeval.errors import StudyFileError
from dialeval.methods.arena.analysis import analyze_arena
from dialeval.store import work

from .test_live_support import LiveClient, LiveServer, WriteTransactions, make_live_study, rid


def stage(html: str) -> str:
    return re.search(r'data-stage="(\w+)"', html).group(1)


def arena_study(tmp_path, **protocol):
    return make_live_study(
        tmp_path / "arena",
        "arena",
        ["repeat", "eliza"],
        protocol={"turns": 3, "battles_per_pair": 5, **protocol},
        annotation={"units_per_annotator": 1},
    )


def state_of(server, client) -> dict:
    return work.get_assignment(server.store, client.assignment_id).state


def battle_votes(server) -> list:
    return [j for j in work.list_judgments(server.store, server.study_id) if j.question == "battle"]


def test_per_turn_battle_votes_changes_and_double_submits(tmp_path):
    with LiveServer([arena_study(tmp_path)]) as server:
        c = LiveClient(server)
        c.enter()
        page = c.task()
        assert stage(page.text) == "chat"  # no fixed opener: the annotator writes first
        sides = state_of(server, c)["sides"]
        assert sorted(sides) == ["eliza", "repeat"]
        for turn in (1, 2, 3):
            events = c.say(f"message number {turn} about gardening")
            chunks = {e["slot"] for e in events if e["event"] == "chunk"}
            assert chunks == {0, 1}  # both models answered, each in its own slot
            page = c.task()
            assert stage(page.text) == "vote"
            pending = state_of(server, c)["pending"]
            assert [cand["bot"] for cand in pending["candidates"]] == sides  # slot 0 = Model A
            texts = [cand["text"] for cand in pending["candidates"]]
            assert page.text.index("Model A") < page.text.index("Model B")
            echo = "model_a" if sides[0] == "repeat" else "model_b"
            refresh = c.task()  # a refresh shows the same two replies, in the same places
            assert stage(refresh.text) == "vote"
            for text in texts:
                assert text.split("\n")[0][:20] in refresh.text or text[:20].replace("'", "&#39;") in refresh.text
            # sending before voting is refused
            r = c.act("send", {"text": "too early"})
            assert r.status_code == 400 and "vote" in r.json()["error"]
            first = rid()
            r = c.act("vote", {"winner": "tie"}, request_id=first)
            assert r.status_code == 200, r.text
            again = c.act("vote", {"winner": "tie"}, request_id=first)  # a double submit: harmless
            assert again.status_code == 200
            assert stage(c.task().text) == "voted"
            r = c.act("vote", {"winner": echo})  # changed within the window
            assert r.status_code == 200 and r.json()["changed"] is True
            assert battle_votes(server) == [] or len(battle_votes(server)) == turn - 1  # not final yet
            r = c.act("vote", {"winner": "nonsense"})
            assert r.status_code == 400
            if turn < 3:
                continue  # the next message makes the vote final
            nid = rid()
            r = c.act("next", {}, request_id=nid)
            assert r.status_code == 200 and r.json()["done"] is True
            assert c.act("next", {}, request_id=nid).status_code == 200  # a repeated click on a finished battle
        votes = battle_votes(server)
        assert [j.value["turn"] for j in votes] == [1, 2, 3]
        for j in votes:
            assert j.value["winner"] in ("model_a", "model_b")  # the changed votes, not the ties
            assert (j.value["model_a"], j.value["model_b"]) == tuple(sides)
            assert j.value["anonymous"] is True
            assert j.value[j.value["winner"]] == "repeat"
        assert {j.meta.get("changes") for j in votes} == {1}
        conv = server.store.get_conversation(server.study_id, f"live-{c.assignment_id}")
        bot_turns = [t for t in conv.turns if t.speaker == "bot"]
        assert len(bot_turns) == 3 and all(len(t.candidates) == 2 for t in bot_turns)
        assert 'id="completion-code"' in c.task().text  # one battle per annotator here: done
        report = analyze_arena(server.store.load_dataset(server.study_id), n_boot=50)
        assert report["systems"][0]["name"] == "repeat" and report["battles"] == 3
        assert set(report["turn_curve"]["repeat"]) == {"1", "2", "3"}


def test_vote_is_final_after_the_window(tmp_path):
    with LiveServer([arena_study(tmp_path, turns=1, change_seconds=0.5)]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        c.say("hello there")
        assert c.act("vote", {"winner": "model_a"}).status_code == 200
        clock.advance(0.7)
        r = c.act("vote", {"winner": "model_b"})
        assert r.status_code == 400 and "final" in r.json()["error"]
        votes = battle_votes(server)
        assert len(votes) == 1 and votes[0].value["winner"] == "model_a"
        assert work.get_assignment(server.store, c.assignment_id).status == "submitted"


def test_the_names_are_shown_once_the_last_vote_is_final(tmp_path):
    """The battle's last vote made final by "next" answers with the two names (Model A first); a page
    loaded after the window shows them on the closed battle. Nothing names a model before that."""
    with LiveServer([arena_study(tmp_path, turns=1, change_seconds=0.5, battles_per_pair=2)]) as server:
        first, second = LiveClient(server), LiveClient(server)
        for c in (first, second):
            c.enter()
            c.task()
            c.say("hello there")
            assert c.act("vote", {"winner": "tie"}).status_code == 200
            assert "data-reveal-name>repeat<" not in c.task().text  # the window is open: no names yet
        r = first.act("next", {})
        sides = state_of(server, first)["sides"]
        assert r.status_code == 200 and r.json()["done"] is True
        assert r.json()["reveal"] == [{"side": "Model A", "name": sides[0]}, {"side": "Model B", "name": sides[1]}]
        clock.advance(0.7)
        page = second.task().text
        assert stage(page) == "complete"
        names = re.findall(r"data-reveal-name>([^<]*)<", page)
        assert names == state_of(server, second)["sides"]
        assert all(j.value["anonymous"] for j in battle_votes(server)) and len(battle_votes(server)) == 2


def test_a_vote_held_when_the_tab_closed_counts_once_the_window_is_over(tmp_path):
    """The annotator votes and closes the tab inside the change window, never to return: the vote
    becomes final when the next person is given work (before the scheduler could expire the
    battle), and the battle counts."""
    with LiveServer([arena_study(tmp_path, turns=1, change_seconds=0.5, battles_per_pair=2)]) as server:
        gone = LiveClient(server)
        gone.enter()
        gone.task()
        gone.say("hello there")
        assert gone.act("vote", {"winner": "model_b"}).status_code == 200
        assert battle_votes(server) == []  # held, changeable
        clock.advance(0.7)  # the window passes; the closed tab sends nothing more
        nxt = LiveClient(server)
        nxt.enter()
        nxt.task()
        votes = battle_votes(server)
        assert len(votes) == 1 and votes[0].value["winner"] == "model_b"
        assert work.get_assignment(server.store, gone.assignment_id).status == "submitted"
        # the closed tab's page, opened again later, shows the battle as done; nothing is stored twice
        gone.task()
        assert len(battle_votes(server)) == 1


def test_a_turn_two_requests_both_add_is_stored_once(tmp_path):
    """Two requests that finalise the same per-turn vote at once (a watch and a page load) add the
    continuing reply once: the store appends a turn only at the index both expected."""
    from dialeval.records import Turn

    with LiveServer([arena_study(tmp_path, turns=2)]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        c.say("hello there")
        conv = f"live-{c.assignment_id}"  # a battle's conversation is named after its assignment
        n = len(server.store.get_conversation(server.study_id, conv).turns)
        first = server.store.append_turn(server.study_id, conv, Turn("bot", "one", bot="eliza"), at=n)
        second = server.store.append_turn(server.study_id, conv, Turn("bot", "one", bot="eliza"), at=n)
        assert (first, second) == (n, None)
        assert len(server.store.get_conversation(server.study_id, conv).turns) == n + 1


def test_a_bot_naming_itself_makes_the_vote_non_anonymous(tmp_path):
    with LiveServer([arena_study(tmp_path, turns=1, vote="end")]) as server:
        c = LiveClient(server)
        c.enter()
        page = c.task()
        assert stage(page.text) == "chat"
        c.say("are you Repeat or something else?")  # the echo bot repeats its own name
        assert state_of(server, c)["revealed"] == ["repeat"]
        page = c.task()
        assert stage(page.text) == "vote"  # end mode: every message written, vote now
        assert c.act("vote", {"winner": "model_b"}).status_code == 200
        assert c.act("next", {}).json()["done"] is True
        (vote,) = battle_votes(server)
        assert vote.value["anonymous"] is False and vote.value["revealed"] == ["repeat"]
        report = analyze_arena(server.store.load_dataset(server.study_id), n_boot=20)
        assert report["systems"] == [] and report["non_anonymous"]["votes"] == 1
        admin = c.http.get(c.url("admin"), params={"token": server.served.admin_token})
        assert admin.status_code == 200 and "eliza vs repeat" in admin.text
        assert re.search(r"non-anonymous votes.*?1", admin.text, re.DOTALL)


def test_continue_with_chosen_shares_the_preferred_reply(tmp_path):
    with LiveServer([arena_study(tmp_path, turns=2, continue_with="chosen")]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        c.say("tell me about rivers")
        sides = state_of(server, c)["sides"]
        pending = state_of(server, c)["pending"]
        pick = "model_a" if sides[0] == "eliza" else "model_b"
        assert c.act("vote", {"winner": pick}).status_code == 200
        c.say("and lakes?")  # the next message makes the vote final: the chosen reply is the history
        conv = server.store.get_conversation(server.study_id, f"live-{c.assignment_id}")
        chosen = conv.turns[1]
        assert chosen.bot == "eliza" and chosen.text == pending["candidates"][sides.index("eliza")]["text"]
        # the echo bot saw eliza's reply as its own last turn, so it answers the new message only
        echo = next(cand for cand in state_of(server, c)["pending"]["candidates"] if cand["bot"] == "repeat")
        assert echo["text"] == "You said: and lakes?"


def test_study_file_refuses_chosen_with_an_end_vote():
    data = {"name": "x", "method": "arena", "bots": [{"name": "a", "type": "repeat"}, {"name": "b", "type": "eliza"}]}
    with pytest.raises(StudyFileError, match="continue_with"):
        parse_study({**data, "protocol": {"vote": "end", "continue_with": "chosen"}})
    with pytest.raises(StudyFileError, match="vote"):
        parse_study({**data, "protocol": {"vote": "sometimes"}})
    assert parse_study(data).options.change_seconds == 10


def test_an_imported_arena_study_is_not_served(tmp_path):
    from dialeval.web.app import create_app

    folder = make_live_study(
        tmp_path / "imported",
        "arena",
        [{"name": "gpt-4", "type": "imported"}, {"name": "vicuna-13b", "type": "imported"}],
        name="imported-arena",
    )
    app = create_app([folder])
    served = next(iter(app.state.studies.values()))
    try:
        assert served.protocol is None and "imported battles are analysed" in served.error
    finally:
        served.ctx.store.close()


# One battle of three per-turn votes once its task page was shown (the assignment and the conversation
# are made then): per vote the message's rate-limit token, the message with the generation mark, the
# two replies, the held vote, and the vote made final with the continuing reply (5 x 3), and the
# conversation's end (1). It was 25 before a message, a final vote and their state shared commits;
# watching the replies stream writes nothing.
WRITES_PER_BATTLE = 16


def test_a_battle_commits_few_write_transactions(tmp_path):
    with LiveServer([arena_study(tmp_path, turns=3)], fast_limits=False) as server:
        c = LiveClient(server)
        c.enter()
        writes = WriteTransactions(server.store.engine)
        for turn in (1, 2, 3):
            assert stage(c.task().text) == "chat"
            events = c.say(f"message number {turn} about gardening and the weather")
            assert any(e["event"] == "done" for e in events)
            assert stage(c.task().text) == "vote"
            assert c.act("vote", {"winner": "tie"}).status_code == 200
            assert stage(c.task().text) == "voted"
            assert c.act("next", {}).status_code == 200
        assert [j.value["turn"] for j in battle_votes(server)] == [1, 2, 3]
        assert writes.count <= WRITES_PER_BATTLE, writes.count
