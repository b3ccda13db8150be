"""A live chat's task page over real HTTP (uvicorn on loopback): its first view stores the chat with one
insert and reads nothing back, later views read it once for the whole page (render and progress), and
two tabs opening the first page together store one chat."""

from __future__ import annotations

import re
import threading

import pytest
from sqlalchemy import event

from .test_live_support import LiveClient, LiveServer, make_live_study


class ConversationStatements:
    """The statements on the conversations table an engine runs while counting, by their first word."""

    def __init__(self, engine):
        self.engine = engine
        self.seen: list[str] = []
        self.counting = False
        event.listen(engine, "before_cursor_execute", self._statement)

    def _statement(self, conn, cursor, statement, parameters, context, executemany):
        if self.counting and re.search(r"\b(FROM|INTO|UPDATE)\s+conversations\b", statement):
            self.seen.append(statement.lstrip().split(None, 1)[0].upper())

    def during(self, fn):
        self.seen, self.counting = [], True
        try:
            return fn()
        finally:
            self.counting = False
            event.remove(self.engine, "before_cursor_execute", self._statement)
            event.listen(self.engine, "before_cursor_execute", self._statement)


def enter_without_task(c: LiveClient) -> None:
    """Start, consent and Begin, without following Begin's redirect to the task page."""
    c.http.get(c.url())
    r = c.http.post(c.url("start"), data={})
    c.csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
    c.http.post(c.url("consent"), data={"csrf": c.csrf, "agree": "yes"})
    r = c.http.post(c.url("instructions"), data={"csrf": c.csrf}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].endswith("/task")


@pytest.fixture(params=["sqlite", "postgresql"])
def single_model_server(request, tmp_path):
    database = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    folder = make_live_study(
        tmp_path / "sm",
        "single-model",
        ["repeat", "eliza"],
        protocol={"bot_turns": 2, "conversations_per_bot": 5},
        database=database,
    )
    with LiveServer([folder]) as server:
        yield server


def test_the_first_page_stores_the_chat_once_and_later_pages_read_it_once(single_model_server):
    server = single_model_server
    counted = ConversationStatements(server.store.engine)
    c = LiveClient(server)
    enter_without_task(c)
    page = counted.during(c.task)
    assert page.status_code == 200 and 'data-stage="waiting"' in page.text
    assert "Hi!" in page.text  # the fixed opener, stored with the chat
    # one look-up that finds nothing, one insert; not read back, not read again by the progress line
    assert counted.seen == ["SELECT", "INSERT"]
    again = counted.during(c.task)
    assert again.status_code == 200 and "Hi!" in again.text
    assert counted.seen == ["SELECT"]  # render and progress share one read of the chat
    conv = server.store.get_conversation(server.study_id, f"live-{c.assignment_id}")
    assert [t.text for t in conv.turns] == ["Hi!"] and conv.source == "live"
    c.close()


def test_two_tabs_opening_the_first_page_together_store_one_chat(single_model_server):
    server = single_model_server
    c = LiveClient(server)
    enter_without_task(c)
    start = threading.Barrier(2)
    pages: list = [None, None]

    def open_tab(i: int) -> None:
        start.wait()
        pages[i] = c.http.get(c.url("task"))

    tabs = [threading.Thread(target=open_tab, args=(i,)) for i in range(2)]
    for t in tabs:
        t.start()
    for t in tabs:
        t.join(30)
    assert [p.status_code for p in pages] == [200, 200]
    ids = {re.search(r"/a/(\d+)/", p.text).group(1) for p in pages}
    assert len(ids) == 1  # one assignment, shown in both tabs
    dataset = server.store.load_dataset(server.study_id)
    live = [conv for conv in dataset.conversations if conv.source == "live"]
    assert len(live) == 1 and [t.text for t in live[0].turns] == ["Hi!"]
    c.close()
