"""A per-user cache directory for things that are slow to build and never change for one input
(the retrieval bot's TF-IDF index of a corpus).

Where: ``$DIALEVAL_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/dialeval`` or ``~/.cache/dialeval``
(Linux and others), ``~/Library/Caches/dialeval`` (macOS), ``%LOCALAPPDATA%\\dialeval\\Cache``
(Windows). Entries are named by a hash of everything they depend on (the corpus version or the
file's path, size and modification time, the build settings, the library versions), so a new corpus
or version builds a new entry; deleting the folder is always safe. Written by hand because the
rule is four lines (platformdirs would be a new dependency for it). Files are pickles written and
read only by this user's own dialeval.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

FORMAT = 1


def cache_dir() -> Path:
    if os.environ.get("DIALEVAL_CACHE_DIR"):
        return Path(os.environ["DIALEVAL_CACHE_DIR"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "dialeval"
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "dialeval" / "Cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dialeval"


def cache_path(kind: str, *key: Any) -> Path:
    digest = hashlib.sha256(repr((FORMAT, kind, *key)).encode("utf-8")).hexdigest()[:32]
    return cache_dir() / f"{kind}-{digest}.pickle"


def load(path: Path) -> Any | None:
    """The cached object, or None when missing or unreadable (then it is simply rebuilt)."""
    try:
        with path.open("rb") as f:
            return pickle.load(f)
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, ValueError):
        return None


def store(path: Path, value: Any) -> None:
    """Write atomically (a temporary file renamed into place); a cache that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False, suffix=".tmp") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(f.name, path)
    except OSError:
        pass
