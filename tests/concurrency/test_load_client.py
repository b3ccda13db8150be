"""The load client of every method (dialeval.simulate.load.drive_method, used by benchmarks/load.py)
against a real `dialeval serve` process: a few annotators for a few seconds on ACUTE, Spot The
Bot and a prompt set with caps small enough to bind, then the integrity checks (nothing lost, nothing counted twice,
no unit or bot pair over its cap). Asserts outcomes, never timings."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from dialeval.simulate import load

# small studies of cheap bots, with caps that bind within the run
BOTS = [{"name": "eliza", "type": "eliza"}, {"name": "repeat", "type": "repeat"}, {"name": "echo", "type": "repeat"}]
SMALL = {
    "acute": {
        "bots": BOTS,
        "generation": {"mode": "self-chat", "conversations": 3, "turns": 4},
        "protocol": {"annotations_per_pair": 3, "comparisons_per_unit": 2},
    },
    "spot-the-bot": {
        "bots": BOTS,
        "generation": {"mode": "bot-bot", "conversations": 2, "turns": 5, "human_conversations": 2},
        "protocol": {"annotations_per_segment": 1, "packages_per_annotator": 1},
    },
    # an attention check after every item: the shared check items are answered by more people than
    # an item's cap of 1 allows, as they should be (the checks counted them over the cap)
    "prompts": {
        "bots": BOTS,
        "protocol": {"annotations_per_item": 1, "items_per_session": 3, "attention_every": 1},
    },
}


def test_methods_come_from_the_registry():
    methods = load.annotation_methods()
    assert {"acute", "spot-the-bot", "prompts", "arena", "pairwise-turn", "single-model"} <= set(methods)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    out = tmp_path_factory.mktemp("load-client")
    folders = {m: load.make_method_study(m, out, overrides=o) for m, o in SMALL.items()}
    first, *rest = folders.values()
    host = load.start_host(first, workers=2, extra=[str(f) for f in rest])
    try:
        yield host, folders
    finally:
        load.stop_host(host)


@pytest.mark.parametrize("method", sorted(SMALL))
def test_load_client_integrity(served, method):
    host, folders = served
    with ThreadPoolExecutor(1) as pool:  # Playwright may hold an event loop in the main thread
        res = pool.submit(
            load.drive_method, host.url, folders[method], f"load-{method}", 6, 3.0, min_judgments=3
        ).result()
    assert not res.errors, res.errors[:3]
    assert res.judgments > 0 and res.task_ms
    assert not any(code >= 500 for code in res.statuses), res.statuses
    checks = load.check_method(folders[method], res)
    assert checks["judgments"] == res.judgments  # a fresh study: every stored judgment is this run's
    # every request is counted (the benchmark's requests per judgment): the timed task pages and
    # posts are a part of them, and each judgment takes at least its post and a page
    assert res.requests >= sum(res.statuses.values()) and res.requests >= 2 * res.judgments


def test_floor_client_process(served, tmp_path):
    """The benchmark's framework floor, as benchmarks/load.py runs it: /healthz of the same server
    from a separate client process, every answer a 200."""
    import json
    import subprocess
    import sys

    host, _folders = served
    out = tmp_path / "floor.json"
    cmd = [sys.executable, "-m", "dialeval.simulate.load", "floor", "--url", host.url]
    subprocess.run([*cmd, "--connections", "3", "--seconds", "1", "--out", str(out)], check=True, timeout=120)
    floor = json.loads(out.read_text(encoding="utf-8"))
    assert floor["failed"] == 0 and floor["requests/s"] > 0 and floor["seconds"] >= 1
    assert floor["answered"] >= floor["requests/s"] * floor["seconds"]  # the window's answers and the warm-up's


def test_check_method_sees_a_lost_judgment(served):
    host, folders = served
    res = load.MethodLoad(method="acute", annotators=1, judgments=1)
    res.per_annotator = {10**9: 1}  # acknowledged to an annotator the store has nothing of
    with pytest.raises(AssertionError, match="stored != acknowledged"):
        load.check_method(folders["acute"], res)


def test_serve_processes_add_up_their_write_lock_time(served, tmp_path):
    """benchmarks/load.py's "limit: write lock": `dialeval serve` with DIALEVAL_LOCK_TIME_DIR set
    writes each process's write-lock totals there (dialeval/store/lock_time.py); after a short ACUTE
    run every answer was at least one turn of the lock, held for some time, and the holders' CPU is
    a part of the time they held it."""
    from dialeval.store.lock_time import LOCK_TIME_DIR_ENV, read_totals

    _host, folders = served
    lock_dir = tmp_path / "lock-time"
    host = load.start_host(folders["acute"], workers=2, env={LOCK_TIME_DIR_ENV: str(lock_dir)})
    try:
        with ThreadPoolExecutor(1) as pool:
            res = pool.submit(
                load.drive_method, host.url, folders["acute"], "load-acute", 3, 1.0, min_judgments=1
            ).result()
    finally:
        load.stop_host(host)  # each process writes its last totals at exit
    assert res.judgments > 0 and not res.errors, res.errors[:3]
    files = sorted(lock_dir.glob("*.json"))
    assert files and all(f.stem.isdigit() and int(f.stem) != os.getpid() for f in files)
    totals = read_totals(lock_dir)
    assert totals["turns"] >= res.judgments and totals["held_s"] > 0
    assert 0 < totals["held_cpu_s"] <= totals["held_s"] * 1.05 + 0.01  # thread CPU within the hold
    (lock_dir / "half.json").write_text("{", encoding="utf-8")  # a file being written: skipped
    assert read_totals(lock_dir) == totals


def test_a_lock_time_folder_that_cannot_be_written_costs_no_request(tmp_path, caplog):
    """DIALEVAL_LOCK_TIME_DIR naming a place that cannot be a folder, or a folder removed while
    serving: a warning, the totals still kept in memory, and no error out of a write transaction."""
    from dialeval.store.lock_time import LockTime

    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    unwritable = LockTime(str(blocker / "lock-time"))  # a folder inside a file
    with unwritable.turn(0.0):
        pass
    assert unwritable.totals()["turns"] == 1 and "not written" in caplog.text
    removed = LockTime(str(tmp_path / "gone"))
    (tmp_path / "gone").rmdir()
    with removed.turn(0.0):  # its write finds no folder
        pass
    removed.write()
    assert removed.totals()["turns"] == 1 and not (tmp_path / "gone").exists()
