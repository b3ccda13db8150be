"""Store.preparing: the units of a study are built by one process at a time (hosts started together
on one database both found no units and both inserted them). Two stores on one database stand for
two processes: the second waits until the first has left."""

from __future__ import annotations

import threading
import time

import pytest

from dialeval.store import Store


def _second_waits_for_the_first(url: str) -> None:
    first, second = Store(url), Store(url)
    try:
        study = first.ensure_study("s", "acute")
        events: list[str] = []
        inside = threading.Event()

        def hold() -> None:
            with first.preparing(study.id):
                events.append("first in")
                inside.set()
                time.sleep(0.5)
                events.append("first out")

        holder = threading.Thread(target=hold)
        holder.start()
        assert inside.wait(10)
        with second.preparing(study.id):
            events.append("second in")
        holder.join()
        assert events == ["first in", "first out", "second in"]
        with second.preparing(study.id + 1):  # another study is not held up
            pass
    finally:
        first.close()
        second.close()


def test_sqlite(tmp_path):
    _second_waits_for_the_first(f"sqlite:///{tmp_path / 'dialeval.db'}")


def test_postgres(pg_url):
    _second_waits_for_the_first(pg_url)  # normalized to the psycopg driver by the store


def test_the_lock_is_released_when_the_block_fails(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'dialeval.db'}")
    try:
        study = store.ensure_study("s", "acute")
        with pytest.raises(RuntimeError), store.preparing(study.id):
            raise RuntimeError("prepare failed")
        with store.preparing(study.id):  # not deadlocked
            pass
    finally:
        store.close()
