"""Errors a user can cause. The CLI prints them without a traceback; the web app answers 4xx."""

from __future__ import annotations


class DialevalError(Exception):
    """Base of every error that a user can fix; the message says what is wrong and how to fix it."""


class StudyFileError(DialevalError):
    """A study file that cannot be read or does not validate."""


class ImportFormatError(DialevalError):
    """A file to import (or read) that is malformed: the message names the file, line and field."""

    def __init__(self, path: str, message: str, line: int | None = None, field: str | None = None):
        where = str(path)
        if line is not None:
            where += f", line {line}"
        if field:
            where += f", field '{field}'"
        # one line whatever the file holds: a line break or control character quoted from it is escaped
        text = "".join(c if c >= " " or c == "\t" else repr(c)[1:-1] for c in f"{where}: {message}")
        super().__init__(text)
        self.path, self.line, self.field = path, line, field


class TextTooLongError(ImportFormatError):
    """A text read from a file that is longer than the import limit (textclean.import_text_limit)."""

    def __init__(
        self, path: str, message: str, length: int, limit: int, line: int | None = None, field: str | None = None
    ):
        super().__init__(path, message, line=line, field=field)
        self.length, self.limit = length, limit


class BotError(DialevalError):
    """A bot that could not answer. `kind` is one of: timeout, refused, client, server, malformed, config."""

    def __init__(self, bot: str, kind: str, message: str):
        super().__init__(f"bot '{bot}' {kind}: {message}")
        self.bot, self.kind = bot, kind


class JudgmentError(DialevalError):
    """A submitted judgment that is malformed or out of range."""


class StoreError(DialevalError):
    """A database that cannot be opened or migrated."""


class StoreBusy(StoreError):
    """The database could not be reached in time (no free connection, a lock held too long).

    Not the user's input: the web app answers 503 with Retry-After, and the request can be repeated."""
