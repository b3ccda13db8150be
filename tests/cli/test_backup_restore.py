"""`dialeval backup`, `restore` and `migrate` as the README prints them, on a study being served:
a backup taken during a load run holds every judgment acknowledged before it began; a restore and a
move to PostgreSQL keep every row and id."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import text

from dialeval.simulate import load
from dialeval.store.engine import database_url, make_engine

TABLES = ("studies", "conversations", "turns", "annotators", "units", "assignments", "judgments", "events")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dialeval.cli", *args], capture_output=True, text=True, timeout=120)


def rows(url: str, table: str, study_name: str = "load-test") -> list[tuple]:
    engine = make_engine(url)
    try:
        with engine.connect() as c:
            sid = c.execute(text("SELECT id FROM studies WHERE name = :n"), {"n": study_name}).scalar()
            if table == "turns":
                q = (
                    "SELECT t.id, t.conversation_id, t.idx, t.text FROM turns t JOIN conversations c "
                    "ON c.id = t.conversation_id WHERE c.study_id = :s ORDER BY t.id"
                )
            elif table == "studies":
                q = "SELECT id, name FROM studies WHERE id = :s"
            elif table == "judgments":
                q = (
                    "SELECT id, annotator_id, assignment_id, unit_id, question, client_request_id FROM judgments "
                    "WHERE study_id = :s ORDER BY id"
                )
            elif table == "assignments":
                q = "SELECT id, unit_id, annotator_id, status FROM assignments WHERE study_id = :s ORDER BY id"
            else:
                q = f"SELECT id FROM {table} WHERE study_id = :s ORDER BY id"
            return [tuple(r) for r in c.execute(text(q), {"s": sid})]
    finally:
        engine.dispose()


def backup_during_load(folder: Path, db_url: str, dest: Path) -> tuple[list[str], subprocess.CompletedProcess]:
    """Serve, drive annotators, run `dialeval backup` in the middle; returns (acknowledged before it, result)."""
    host = load.start_host(folder, workers=2)
    before: list[str] = []
    result: list = []
    res = load.LoadResult()

    started: list = []

    def during(elapsed: float) -> None:
        # 1 s in, once something is acknowledged (on a machine at load 7 nothing was, 2 s in)
        if elapsed >= 1.0 and res.acknowledged and not started:
            started.append(elapsed)
            before.extend(res.acknowledged)  # acknowledged before the backup begins
            result.append(cli("backup", str(folder), str(dest)))
            res.stop.set()  # the load ran all through the backup: what the test needs of it

    try:
        with ThreadPoolExecutor(1) as pool:  # Playwright's sync API may hold the main thread's loop
            # 120 s at most: the run ends once the backup is done
            pool.submit(load.run_load, host.url, "load-test", 10, 120.0, None, during, res).result()
        deadline = time.monotonic() + 120  # the backup may outlast the load run
        while started and not result and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        load.stop_host(host)
    assert result, "the backup never ran"
    load.check_invariants(db_url, res.acknowledged, cap=2)
    return before, result[0]


def test_backup_during_load_then_restore_sqlite(tmp_path):
    folder = load.make_study(tmp_path / "s", conversations_per_pair=30, humans=15)
    url = database_url(folder)
    dest = tmp_path / "backups" / "s.db"
    before, done = backup_during_load(folder, url, dest)
    assert done.returncode == 0, done.stderr
    assert "backup of 'load-test' written to" in done.stdout
    assert before, "nothing was acknowledged before the backup"
    copy = f"sqlite:///{dest}"
    stored = {r[5] for r in rows(copy, "judgments")}
    assert set(before) <= stored  # every acknowledged judgment is in the copy
    # restore into a new folder (same study file, no database yet)
    target = tmp_path / "restored"
    target.mkdir()
    shutil.copy(folder / "study.yaml", target / "study.yaml")
    r = cli("restore", str(dest), str(target))
    assert r.returncode == 0, r.stderr
    for table in TABLES:
        assert rows(database_url(target), table) == rows(copy, table), table
    again = cli("restore", str(dest), str(target))
    assert again.returncode == 2 and "already holds a study named 'load-test'" in again.stderr
    # the restored folder serves the restored study (same stable id), and the work goes on
    host = load.start_host(target, workers=1)
    try:
        with ThreadPoolExecutor(1) as pool:
            more = pool.submit(load.run_load, host.url, "load-test", 3, 2.0).result()
    finally:
        load.stop_host(host)
    assert more.acknowledged
    load.check_invariants(database_url(target), more.acknowledged, cap=2)


def test_backup_during_load_then_restore_postgres(tmp_path, pg_url):
    folder = load.make_study(tmp_path / "s", conversations_per_pair=30, humans=15, database=pg_url)
    dest = tmp_path / "s.db"
    before, done = backup_during_load(folder, pg_url, dest)
    assert done.returncode == 0, done.stderr
    copy = f"sqlite:///{dest}"
    assert set(before) <= {r[5] for r in rows(copy, "judgments")}
    assert before
    other, drop = load.scratch_pg_schema(pg_url.split("?")[0])
    try:
        target = tmp_path / "restored"
        target.mkdir()
        text_ = (folder / "study.yaml").read_text().replace(pg_url, other)
        (target / "study.yaml").write_text(text_)
        r = cli("restore", str(dest), str(target))
        assert r.returncode == 0, r.stderr
        for table in TABLES:
            assert rows(other, table) == rows(copy, table), table
    finally:
        drop()


def test_migrate_sqlite_to_postgres_keeps_every_id(tmp_path, pg_url):
    # enough packages for both loads (3 s + 2 s): 20 conversations per pair ran out once serving got faster
    folder = load.make_study(tmp_path / "s", conversations_per_pair=60, humans=30)
    host = load.start_host(folder, workers=1)
    try:
        with ThreadPoolExecutor(1) as pool:
            res = pool.submit(load.run_load, host.url, "load-test", 6, 3.0).result()
    finally:
        load.stop_host(host)
    assert res.acknowledged
    old = database_url(folder)
    r = cli("migrate", str(folder), "--to", pg_url)
    assert r.returncode == 0, r.stderr
    for table in TABLES:
        assert rows(pg_url, table) == rows(old, table), table
    assert f"database: {pg_url}" in (folder / "study.yaml").read_text()
    # the moved study is served from PostgreSQL and new ids follow the copied ones
    host = load.start_host(folder, workers=1)
    try:
        with ThreadPoolExecutor(1) as pool:
            more = pool.submit(load.run_load, host.url, "load-test", 3, 2.0).result()
    finally:
        load.stop_host(host)
    assert more.acknowledged
    load.check_invariants(pg_url, res.acknowledged + more.acknowledged, cap=2)
    again = cli("migrate", str(folder), "--to", pg_url)
    assert again.returncode == 2 and "already uses that database" in again.stderr
