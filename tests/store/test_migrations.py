"""A study made by an older dialeval (schema version 1) still opens and is migrated."""

from __future__ import annotations

import sqlite3

import pytest

from dialeval.errors import StoreError
from dialeval.store import SCHEMA_VERSION, Store

# The version-1 tables as dialeval 0.0.x created them: no events table, no assignments.state.
V1_DDL = """
CREATE TABLE dialeval_schema (id INTEGER PRIMARY KEY, version INTEGER, dialeval_version VARCHAR(32));
INSERT INTO dialeval_schema VALUES (1, 1, '0.0.9');
CREATE TABLE studies (id INTEGER PRIMARY KEY, name VARCHAR(200) UNIQUE, method VARCHAR(40), config JSON,
                      created_at DATETIME);
CREATE TABLE bots (id INTEGER PRIMARY KEY, study_id INTEGER, name VARCHAR(200), type VARCHAR(40), config JSON);
CREATE TABLE conversations (id INTEGER PRIMARY KEY, study_id INTEGER, external_id VARCHAR(200), source VARCHAR(40),
                            bots JSON, meta JSON, error TEXT, created_at DATETIME);
CREATE TABLE turns (id INTEGER PRIMARY KEY, conversation_id INTEGER, idx INTEGER, speaker VARCHAR(40), text TEXT,
                    bot VARCHAR(200), is_seed BOOLEAN, candidates JSON, chosen INTEGER, meta JSON,
                    created_at DATETIME);
CREATE TABLE annotators (id INTEGER PRIMARY KEY, study_id INTEGER, external_id VARCHAR(200), platform VARCHAR(40),
                         status VARCHAR(20), qc JSON, meta JSON, created_at DATETIME);
CREATE TABLE units (id INTEGER PRIMARY KEY, study_id INTEGER, external_id VARCHAR(200), kind VARCHAR(40),
                    conversation_ids JSON, payload JSON, created_at DATETIME);
CREATE TABLE assignments (id INTEGER PRIMARY KEY, study_id INTEGER, unit_id INTEGER, annotator_id INTEGER,
                          status VARCHAR(20), shown_order JSON, started_at DATETIME, expires_at DATETIME,
                          submitted_at DATETIME);
CREATE TABLE judgments (id INTEGER PRIMARY KEY, study_id INTEGER, assignment_id INTEGER, annotator_id INTEGER,
                        unit_id INTEGER, conversation_id INTEGER, question VARCHAR(100), value JSON,
                        justification TEXT, elapsed_s FLOAT, shown_order JSON, client_request_id VARCHAR(100),
                        meta JSON, created_at DATETIME, UNIQUE (annotator_id, client_request_id));
INSERT INTO studies VALUES (1, 'old', 'acute', '{}', '2025-01-01 00:00:00');
INSERT INTO annotators VALUES (1, 1, 'w1', 'link', 'active', '{}', '{}', '2025-01-01 00:00:00');
INSERT INTO units VALUES (1, 1, 'u1', 'acute-pair', '[]', '{}', '2025-01-01 00:00:00');
INSERT INTO assignments VALUES (1, 1, 1, 1, 'submitted', '["a","b"]', '2025-01-01 00:00:00', NULL, NULL);
INSERT INTO judgments VALUES (1, 1, 1, 1, 1, NULL, 'preference', '{"winner": "a"}', 'nicer', 3.0, NULL, 'r1', '{}',
                              '2025-01-01 00:00:00');
"""


def test_version_1_database_is_migrated(tmp_path):
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.executescript(V1_DDL)
    con.close()
    store = Store(f"sqlite:///{path}")
    assert store.migrated_from == 1
    study = store.get_study("old")
    data = store.load_dataset(study.id)
    assert data.judgments[0].value == {"winner": "a"} and data.judgments[0].justification == "nicer"
    store.log_event(study.id, "opened-after-migration")  # the events table exists now
    store.close()
    con = sqlite3.connect(path)
    assert con.execute("SELECT version FROM dialeval_schema").fetchone()[0] == SCHEMA_VERSION
    assert con.execute("SELECT state FROM assignments").fetchone()[0] == "{}"
    con.close()
    # Opening again is a no-op.
    assert Store(f"sqlite:///{path}").migrated_from == SCHEMA_VERSION


def test_newer_database_is_refused(tmp_path):
    path = tmp_path / "new.db"
    Store(f"sqlite:///{path}").close()
    con = sqlite3.connect(path)
    con.execute("UPDATE dialeval_schema SET version = 999")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="newer than this dialeval"):
        Store(f"sqlite:///{path}")


def test_foreign_database_is_refused(tmp_path):
    path = tmp_path / "foreign.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE studies (id INTEGER)")
    con.close()
    with pytest.raises(StoreError, match="not made by dialeval"):
        Store(f"sqlite:///{path}")
