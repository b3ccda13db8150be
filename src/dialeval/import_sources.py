"""What has been imported into a study: a content hash per imported source, so an import is idempotent.

Importing the same file (or folder) again changes nothing and says so; a different source into a
study that already holds data is refused unless the user asks to append. The hashes live in the
study's database (an `import` event per source, written in the same transaction as the data).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .errors import DialevalError

_CHUNK = 1 << 20


def source_digest(path: str | Path, *more: str | Path) -> str:
    """SHA-256 of a file's bytes, or of a folder's files (relative names and bytes, in sorted order);
    `more` files (e.g. an arena import's judge files) are part of the same source."""
    digest = hashlib.sha256()
    for root in (Path(path), *(Path(m) for m in more)):
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for file in files:
            if file != root:
                digest.update(file.relative_to(root).as_posix().encode("utf-8") + b"\0")
            with file.open("rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
            digest.update(b"\0")
    return digest.hexdigest()


def source_record(fmt: str, path: str | Path, digest: str, **details: Any) -> dict[str, Any]:
    from datetime import UTC, datetime

    return {
        "format": fmt,
        "path": str(Path(path).resolve()),
        "sha256": digest,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        **details,
    }


def already_imported(
    previous: list[dict[str, Any]], fmt: str, digest: str, domain: str | None = None
) -> dict[str, Any] | None:
    """The earlier import of the same content (and format and domain), if there was one."""
    for record in previous:
        if record.get("sha256") == digest and record.get("format") == fmt and record.get("domain") == domain:
            return record
    return None


def refuse_other_source(
    study: str | Path, previous: list[dict[str, Any]], judgments: int, conversations: int, append: bool
) -> None:
    """A study that already holds data takes another source only with --append."""
    if append or not (previous or judgments or conversations):
        return
    if previous:
        held = ", ".join(f"{Path(p.get('path', '?')).name} ({p.get('format')})" for p in previous)
        why = f"it holds data imported from {held}"
    else:
        why = f"it holds {judgments} judgments and {conversations} conversations already"
    raise DialevalError(f"{study}: {why}; pass --append to add this source to it, or import into a new folder")
