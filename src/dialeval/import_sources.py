"""What has been imported into a study: a content hash per imported source, so an import is idempotent.

Importing the same file (or folder) again changes nothing and says so; a different source into a
study that already holds data is refused unless the user asks to append. The hashes live in the
study's database (an `import` event per source, written in the same transaction as the data).
Two hashes per source: of its bytes, and of the records read from it (:func:`records_digest`), so
that a copy in another encoding or with other line ends (CRLF) is recognised as the same records.
Imports into one study folder take turns (:func:`study_lock`): two at once can never both find the
source new and store it twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import json_text
from .errors import DialevalError

_CHUNK = 1 << 20
_DIGEST_BATCH = 4096  # record texts hashed at once


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


class RecordsDigest:
    """SHA-256 of the records of an import (not of the file's bytes): the same battles,
    conversations and judgments read from a UTF-16 or CRLF copy give the same digest. Where the
    source file lives is left out (the data set's meta, a judge annotator's file path). Records are
    hashed by their repr, judgments by their JSON text (_judgment_text; a later dialeval spelling
    them otherwise only misses a match), each kind on its own, so that a streamed import (records
    of every kind interleaved) gives the digest of the same Dataset read whole."""

    KINDS = ("conversations", "units", "annotators", "judgments")

    def __init__(self) -> None:
        self.parts = {kind: hashlib.sha256() for kind in self.KINDS}
        # texts not hashed yet: hashed a batch at a time, the same bytes as one update per record
        self.pending: dict[str, list[str]] = {kind: [] for kind in self.KINDS}

    def add(self, kind: str, item: Any) -> None:
        if kind == "annotators" and "file" in item.meta:
            item = dataclasses.replace(item, meta={k: v for k, v in item.meta.items() if k != "file"})
        pending = self.pending[kind]
        pending.append(_judgment_text(item) if kind == "judgments" else repr(item))
        if len(pending) >= _DIGEST_BATCH:
            self._hash_pending(kind)

    def _hash_pending(self, kind: str) -> None:
        pending = self.pending[kind]
        if pending:
            pending.append("")  # each record's text ends with a newline
            self.parts[kind].update("\n".join(pending).encode("utf-8", "surrogatepass"))
            pending.clear()

    def adder(self, kind: str) -> Callable[[Any], None]:
        """`add(kind, item)` for many items of one kind (not annotators): the same digest, without
        the per-item lookups (a million battles)."""
        pending = self.pending[kind]
        append, hash_pending = pending.append, self._hash_pending
        text = _judgment_text if kind == "judgments" else repr

        def add(item: Any) -> None:
            append(text(item))
            if len(pending) >= _DIGEST_BATCH:
                hash_pending(kind)

        return add

    def conversation_adder(self) -> Callable[[Any, list[tuple[str, str, str | None]]], None]:
        """`add("conversations", c)` for a conversation whose turns come apart as plain (speaker,
        text, bot) tuples (RecordBatch): the text of its repr with those Turns in it, without
        building them (millions of turns)."""
        pending = self.pending["conversations"]  # after the conversations added before, in order
        append, hash_pending = pending.append, self._hash_pending
        around: dict[tuple[str, str | None], tuple[str, str]] = {}  # a turn's repr before and after its text

        def add(conversation: Any, turns: list[tuple[str, str, str | None]]) -> None:
            shown = []
            for speaker, said, bot in turns:
                pair = around.get((speaker, bot))
                if pair is None:
                    pair = around[speaker, bot] = (_TURN_HEAD % (speaker,), _TURN_TAIL % (bot,))
                shown.append(pair[0] + repr(said) + pair[1])
            c = conversation
            text = _CONVERSATION % (c.id, c.bots, ", ".join(shown), c.source, c.meta, c.error)
            append(text)
            if len(pending) >= _DIGEST_BATCH:
                hash_pending("conversations")

        return add

    def hexdigest(self) -> str:
        for kind in self.KINDS:
            self._hash_pending(kind)
        return hashlib.sha256("".join(self.parts[k].hexdigest() for k in self.KINDS).encode()).hexdigest()


def _judgment_text(judgment: Any) -> str:
    """A judgment's text in the digest: msgspec's JSON of its fields, by name (json_text), a fifth
    of the cost of its repr (a million battles in an import); its repr where msgspec cannot write
    it (a value of a type it does not know)."""
    try:
        return json_text.dumps(judgment)
    except (TypeError, ValueError):
        return repr(judgment)


# repr of records.Conversation and of a records.Turn with its defaults past `bot` (a test holds
# them to the dataclasses' own repr)
_CONVERSATION = "Conversation(id=%r, bots=%r, turns=[%s], source=%r, meta=%r, error=%r)"
_TURN_HEAD, _TURN_TAIL = "Turn(speaker=%r, text=", ", bot=%r, is_seed=False, candidates=None, chosen=None, meta={})"


def records_digest(dataset: Any) -> str:
    """The RecordsDigest of a whole imported Dataset."""
    from .records import plain_turns

    digest = RecordsDigest()
    turns = plain_turns(dataset.conversations)
    if turns is not None:  # the same text as each conversation's repr, without a repr per Turn
        add_conversation = digest.conversation_adder()
        for conversation, its_turns in zip(dataset.conversations, turns, strict=True):
            add_conversation(conversation, its_turns)
    else:
        for conversation in dataset.conversations:
            digest.add("conversations", conversation)
    for annotator in dataset.annotators:  # add() leaves out a judge's file
        digest.add("annotators", annotator)
    for kind in ("units", "judgments"):
        add = digest.adder(kind)
        for item in getattr(dataset, kind):
            add(item)
    return digest.hexdigest()


@contextlib.contextmanager
def study_lock(study: Path, waiting: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the study folder's import lock (created if missing) for the block; `waiting` is called
    when another import holds it. An OS lock on the folder itself: released when the process ends,
    however it ends, so a killed import never leaves a stale lock behind."""
    study.mkdir(parents=True, exist_ok=True)
    if sys.platform == "win32":  # a lock file in the folder
        with _windows_lock(study, waiting):
            yield
        return
    import fcntl

    fd = os.open(study, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


if sys.platform == "win32":  # (type-checked on Windows only)

    @contextlib.contextmanager
    def _windows_lock(study: Path, waiting: Callable[[], None] | None) -> Iterator[None]:  # pragma: no cover
        import msvcrt
        import time

        with (study / ".import.lock").open("a+b") as handle:
            told = False
            while True:
                try:
                    msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                    break
                except OSError:
                    if waiting is not None and not told:
                        waiting()
                        told = True
                    time.sleep(0.2)
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)


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
    previous: list[dict[str, Any]], fmt: str, digest: str, domain: str | None = None, records: str | None = None
) -> dict[str, Any] | None:
    """The earlier import of the same content (and format and domain), if there was one: the same
    bytes, or (`records`, a records_digest) the same records in another encoding or line ending."""
    for record in previous:
        if record.get("format") != fmt or record.get("domain") != domain:
            continue
        if record.get("sha256") == digest or (records is not None and record.get("records_sha256") == records):
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
