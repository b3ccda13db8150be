"""The retrieval index is built once per corpus and cached on disk in the user cache folder."""

from __future__ import annotations

import os
import time

from dialeval import cache
from dialeval.bots import retrieval


def test_index_is_cached_on_disk_and_rebuilt_when_the_corpus_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello there\nhi, how are you\nfine thanks\n\nwhat is your job\nI bake bread\n", "utf-8")
    monkeypatch.setattr(retrieval, "_indexes", {})
    first = retrieval.get_index(str(corpus), None, 2)
    entries = list((tmp_path / "cache").glob("retrieval-index-*.pickle"))
    assert len(entries) == 1 and cache.cache_dir() == tmp_path / "cache"

    # a new process (empty in-memory table) loads it instead of building
    monkeypatch.setattr(retrieval, "_indexes", {})
    built = []
    monkeypatch.setattr(retrieval, "_build", lambda *a: built.append(a))
    again = retrieval.get_index(str(corpus), None, 2)
    assert built == [] and again.responses == first.responses and again.openings == first.openings
    assert (again.matrix != first.matrix).nnz == 0

    # an edited corpus is a different entry
    monkeypatch.undo()
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(retrieval, "_indexes", {})
    corpus.write_text("good morning\nmorning to you\n", "utf-8")
    os.utime(corpus, (time.time() + 5, time.time() + 5))
    third = retrieval.get_index(str(corpus), None, 2)
    assert third.openings == ["good morning"]
    assert len(list((tmp_path / "cache").glob("retrieval-index-*.pickle"))) == 2


def test_an_unwritable_cache_folder_is_skipped(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(blocker / "sub"))
    monkeypatch.setattr(retrieval, "_indexes", {})
    corpus = tmp_path / "c.txt"
    corpus.write_text("apple banana\ncherry dates\n", "utf-8")
    assert retrieval.get_index(str(corpus), None, 1).openings == ["apple banana"]


def test_the_bundled_corpus_is_parsed_once_per_user_and_read_back_the_same(tmp_path, monkeypatch):
    """A new process reads the bundled corpus from the cache (no 40 MB JSON parse), turn for turn the
    same as the parse; a broken cache file is parsed again and replaced."""
    from dialeval import corpus

    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    parsed = corpus._load_bundled()
    entries = list((tmp_path / "cache").glob("bundled-corpus-*.pickle"))
    assert len(entries) == 1 and len(parsed) > 4000

    parses = []
    real_parse = corpus._parse_bundled
    monkeypatch.setattr(corpus, "_parse_bundled", lambda path: parses.append(path) or real_parse(path))
    assert corpus._load_bundled() == parsed and parses == []

    entries[0].write_bytes(b"not a pickle")
    assert corpus._load_bundled() == parsed and len(parses) == 1
    assert corpus._load_bundled() == parsed and len(parses) == 1  # the broken entry was replaced
