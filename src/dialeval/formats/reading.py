"""The one reading layer for outside files: every importer in ``dialeval.formats`` reads through it.

What it guarantees, so that no importer has to think about it again:

- **Decoding** (:func:`read_text`): a UTF-8, UTF-16 or UTF-32 byte-order mark is honoured; otherwise
  the file is decoded as the session's encoding (``dialeval import --encoding``, default UTF-8),
  strictly. Bytes that do not decode raise :class:`ImportFormatError` naming the file, the byte
  offset and the line.
- **JSON** (:func:`parse_json`, :func:`json_lines`, :func:`json_document`): ``NaN``/``Infinity``
  (not JSON, though Python writes them) and numbers out of range (``1e400``, integers of thousands
  of digits) are refused; nesting deeper than :data:`MAX_JSON_DEPTH` is refused with a message
  instead of a ``RecursionError`` now or later.
- **CSV** (:func:`csv_rows`): the field size limit is set on purpose (:data:`CSV_FIELD_LIMIT`) and a
  longer field is named, as is any other malformation, with its line.
- **Typed fields** (:class:`Record`): ``record.boolean("is_human0")``, ``.integer(..., minimum=0)``,
  ``.number(...)``, ``.text(...)``, ``.ident(...)``, ``.array(...)``, ``.texts(...)``,
  ``.record(...)``, ``.records(...)`` read a field strictly by its declared type: ``"false"`` is not
  true, NaN is not a boolean, a string is not a list of characters, null or an object is not text,
  a float is not an integer unless it is whole. A wrong value raises ImportFormatError naming file,
  line and field (``convo[3].text``).
- **Ids** (:class:`UniqueIds`): an id seen twice in one file with other content is an error naming
  both lines; an exactly identical repeated record is dropped and noted (exports that were
  concatenated or re-run repeat lines; counting them twice would be silently wrong).
- **A session** (:func:`session`): the encoding for the readers, the notes they leave for the user
  (:func:`note`), and the position being read (:func:`position`) so that a bug inside an importer
  can still be reported as one line naming the file and line (see ``dialeval import``).

A new importer: ``for rec in json_lines(path): name = rec.text("model")``; raise ``rec.error(...)``
for its own checks; register ids with ``UniqueIds``.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import hashlib
import io
import itertools
import json
import math
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dialeval.errors import ImportFormatError
from dialeval.json_text import NOT_READ, strict_loads
from dialeval.textclean import clean_imported, clean_imported_within, import_text_limit

MAX_JSON_DEPTH = 64  # deeper than any real export; far below Python's recursion limit
CSV_FIELD_LIMIT = 4 * 1024 * 1024  # characters; the published MTurk batches hold 17 kB at most
INT_LIMIT = 2**63 - 1  # what the stores can hold in an integer column
MAX_DURATION_S = 366 * 24 * 3600  # longest duration of one task an import accepts (a year: MTurk's limit)
DEFAULT_ENCODING = "utf-8"
_BOMS = (  # longest first: the UTF-32 LE mark starts with the UTF-16 LE one
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_MISSING: Any = object()


# --- the session: encoding, notes, where we are ----------------------------------------------------


@dataclass
class Session:
    encoding: str | None = None  # None: UTF-8 unless a byte-order mark says otherwise
    notes: list[str] = field(default_factory=list)
    path: str | None = None  # the file being read, and the line, for the report of a bug
    line: int | None = None


_session: ContextVar[Session | None] = ContextVar("dialeval_reading_session", default=None)


def _current() -> Session:
    """The active session; outside one (a reader called directly) a throwaway one."""
    return _session.get() or Session()


@contextlib.contextmanager
def session(encoding: str | None = None) -> Iterator[Session]:
    """Readers inside the block decode with `encoding` (None: UTF-8 or the file's byte-order mark)
    and leave their notes and their position in the yielded Session."""
    if encoding is not None:
        try:
            encoding = codecs.lookup(encoding).name
        except LookupError:
            known = "e.g. utf-8, latin-1, cp1252, utf-16"
            raise ImportFormatError("--encoding", f"unknown encoding {encoding!r} ({known})") from None
    current = Session(encoding=encoding)
    token = _session.set(current)
    try:
        yield current
    finally:
        _session.reset(token)


def note(message: str) -> None:
    """A remark for the user about the data read (printed by `dialeval import`)."""
    _current().notes.append(message)


def position() -> tuple[str | None, int | None]:
    """The file and line the readers of this session were at last."""
    current = _current()
    return current.path, current.line


def _at(path: str | Path, line: int | None) -> None:
    current = _current()
    current.path, current.line = str(path), line


class ImporterBug(Exception):
    """An unexpected exception inside an importer, as one line for the user (see :func:`as_bug`)."""


def as_bug(exc: BaseException, what: str) -> ImporterBug:
    """One line naming the file and line being read and the log file that holds the traceback:
    a bug to report, never a traceback on the terminal."""
    import datetime
    import os
    import tempfile
    import traceback

    from dialeval.cache import cache_dir

    path, line = position()
    where = f"{path}, line {line}" if path and line else path or what
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    text = f"dialeval {what}\nreading {where}\n\n" + "".join(traceback.format_exception(exc))
    log = None
    for folder in (cache_dir() / "crash-reports", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            log = folder / f"dialeval-import-{stamp}-{os.getpid()}.log"
            log.write_text(text, encoding="utf-8")
            break
        except OSError:
            log = None
    kept = f"the traceback is in {log}" if log else "the traceback could not be written to a log file"
    return ImporterBug(
        f"{where}: dialeval failed on this input ({type(exc).__name__}); this is a bug in dialeval, "
        f"please report it with the file if you can; {kept}"
    )


# --- decoding ----------------------------------------------------------------------------------------


def read_bytes(path: str | Path) -> bytes:
    path = Path(path)
    if not path.exists():
        raise ImportFormatError(str(path), "file not found; check the path")
    if path.is_dir():
        raise ImportFormatError(str(path), "is a folder; this format reads a file")
    _at(path, None)
    return path.read_bytes()


# the first bytes of compressed files that public releases ship (hh-rlhf's *.jsonl.gz, zipped dumps)
_PACKED = ((b"\x1f\x8b", "gzip-compressed", "gunzip -k"), (b"PK\x03\x04", "a zip archive", "unzip"))


def _refuse_packed(head: bytes, path: str | Path) -> None:
    """A compressed file is named as such (not as text in a wrong encoding, whatever --encoding says)."""
    for magic, kind, tool in _PACKED:
        if head.startswith(magic):
            raise ImportFormatError(
                str(path),
                f"is {kind}, not text; unpack it first ({tool} {Path(path).name}) and import the unpacked file",
            )


def decode(data: bytes, path: str | Path, encoding: str | None = None) -> str:
    """`data` as text: a byte-order mark wins, then `encoding`, then the session's, then UTF-8.
    Undecodable bytes raise ImportFormatError with the byte offset and line; a gzip or zip file
    is named as such."""
    _refuse_packed(data[:4], path)
    chosen = encoding or _current().encoding
    for mark, codec in _BOMS:
        if data.startswith(mark):
            chosen = codec
            break
    chosen = chosen or DEFAULT_ENCODING
    try:
        text = data.decode(chosen)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start : exc.start + 4].hex(" ")
        hint = "; pass --encoding (e.g. latin-1 or cp1252) if it is in another encoding"
        hint = hint if chosen.startswith("utf") else ""
        raise ImportFormatError(
            str(path), f"not {chosen} text: bytes {bad} at byte offset {exc.start} ({exc.reason}){hint}", line=line
        ) from None
    if text.startswith("\ufeff"):  # a mark after decoding with an explicit UTF-8 encoding
        text = text[1:]
    return text


def read_text(path: str | Path, encoding: str | None = None) -> str:
    """The whole file as text (see :func:`decode`)."""
    return decode(read_bytes(path), path, encoding)


def lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its end) of a text file; CRLF, LF and CR ends alike.

    Files in an encoding where a newline is the byte 0x0A and nothing else (UTF-8, ASCII, Latin-1,
    cp1252: nearly every export) are read a block at a time, so memory does not grow with the file;
    the others (UTF-16/32) are decoded whole. Same lines and same decoding errors either way."""
    number = 0
    for text, last in text_blocks(path):
        pieces = text.split("\n")
        if not last:
            pieces.pop()  # the block ends with a newline: nothing after it yet
        for line in pieces:
            number += 1
            _at(path, number)
            yield number, line.rstrip("\r")


def text_blocks(path: str | Path) -> Iterator[tuple[str, bool]]:
    """The decoded text of a file in blocks, each but the last ending with a newline, and whether
    it is the last: read_text's text and decoding errors (byte offset and line counted from the
    start of the file), a block at a time in the encodings where a newline is one byte (see lines)."""
    head = read_bytes_head(path)
    _refuse_packed(head, path)
    chosen = _current().encoding
    for mark, codec in _BOMS:
        if head.startswith(mark):
            chosen = codec
            break
    chosen = chosen or DEFAULT_ENCODING
    if codecs.lookup(chosen).name not in _LINE_CODECS:
        yield read_text(path), True
        return
    number, offset, tail = 0, 0, b""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(_BLOCK)
            end = block.rfind(b"\n") + 1 if block else len(tail)
            if block and not end:  # no newline in this block: read on
                tail += block
                continue
            data = tail + block[:end] if block else tail
            tail = block[end:] if block else b""
            text = _decode_block(data, path, chosen, offset, number, first=offset == 0)
            offset += len(data)
            number += data.count(b"\n")
            yield text, not block
            if not block:
                return


_BLOCK = 8 << 20  # bytes read at a time by `lines`
_LINE_CODECS = {"utf-8", "utf-8-sig", "ascii", "latin-1", "iso8859-1", "cp1252"}


def read_bytes_head(path: str | Path) -> bytes:
    """The first bytes of a file (enough for a byte-order mark), with read_bytes' checks."""
    path = Path(path)
    if not path.exists():
        raise ImportFormatError(str(path), "file not found; check the path")
    if path.is_dir():
        raise ImportFormatError(str(path), "is a folder; this format reads a file")
    _at(path, None)
    with open(path, "rb") as handle:
        return handle.read(4)


def _decode_block(data: bytes, path: str | Path, chosen: str, offset: int, lines_before: int, first: bool) -> str:
    """One block of `lines`, decoded as `decode` does the whole file (the same error, with the
    offset and line counted from the start of the file)."""
    codec = chosen if first or chosen != "utf-8-sig" else "utf-8"
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as exc:
        line = lines_before + data[: exc.start].count(b"\n") + 1
        bad = data[exc.start : exc.start + 4].hex(" ")
        hint = "; pass --encoding (e.g. latin-1 or cp1252) if it is in another encoding"
        hint = hint if chosen.startswith("utf") else ""
        where = offset + exc.start
        raise ImportFormatError(
            str(path), f"not {chosen} text: bytes {bad} at byte offset {where} ({exc.reason}){hint}", line=line
        ) from None
    if first and text.startswith("\ufeff"):  # a mark after decoding with an explicit UTF-8 encoding
        text = text[1:]
    return text


# --- JSON --------------------------------------------------------------------------------------------


class _BadNumber(ValueError):
    pass


def _constant(name: str) -> Any:
    raise _BadNumber(f"{name} is not a JSON value; write null (or a number)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadNumber(f"the number {text[:40]} is out of range")
    return value


# one decoder for every parse (json.loads with hooks would build one per call)
_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float)


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return False


def parse_json(text: str, path: str | Path, line: int | None = None, field: str | None = None) -> Any:
    """`text` as JSON, strictly: ImportFormatError (naming file, line, field) for anything that is not
    JSON, NaN/Infinity, numbers out of range, and nesting deeper than MAX_JSON_DEPTH."""
    depth_message = f"nested deeper than {MAX_JSON_DEPTH} levels; no export of this format is"
    try:
        value = strict_loads(text)  # msgspec: the same values, where it reads the text at all
    except NOT_READ:
        value = _parse_json_stdlib(text, path, line, field, depth_message)
    # cheap test first: fewer brackets than the limit cannot nest deeper than it
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth_exceeds(value, MAX_JSON_DEPTH):
        raise ImportFormatError(str(path), depth_message, line=line, field=field)
    return value


def _parse_json_stdlib(text: str, path: str | Path, line: int | None, field: str | None, depth_message: str) -> Any:
    """parse_json through the standard library's decoder: the text msgspec refused read as JSON
    always was, or its error named."""
    try:
        if text.startswith("\ufeff"):  # as json.loads says it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        message = f"not valid JSON ({exc.msg} at column {exc.colno})"
        raise ImportFormatError(str(path), message, line=where, field=field) from None
    except _BadNumber as exc:
        raise ImportFormatError(str(path), str(exc), line=line, field=field) from None
    except RecursionError:
        raise ImportFormatError(str(path), depth_message, line=line, field=field) from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise ImportFormatError(str(path), f"a number out of range ({exc})", line=line, field=field) from None
    return value


def json_document(path: str | Path) -> Any:
    """A file holding one JSON document (its texts cleaned and bounded, textclean.clean_imported)."""
    value = parse_json(read_text(path), path)
    return clean_imported(value, str(path))


def json_lines(path: str | Path, what: str = "a JSON object") -> Iterator[Record]:
    """A Record per non-blank line of a JSON-lines file; a line that is not one JSON object is an
    error naming it. Texts are cleaned and bounded (textclean.clean_imported)."""
    where, limit = str(path), import_text_limit()  # looked up once per file, not per line
    first = True
    for number, raw in lines(path):
        if not raw.strip():
            continue
        try:
            obj = parse_json(raw, path, number)
        except ImportFormatError:
            if first and (raw.strip() == "[" or raw.lstrip().startswith(("[{", "[ {"))):  # a list over many lines
                raise ImportFormatError(
                    str(path),
                    f"is one JSON list over many lines; this reads JSON lines, {what} per line "
                    f"(jq -c '.[]' {Path(path).name} > {Path(path).stem}.jsonl writes them)",
                    line=number,
                ) from None
            raise
        first = False
        if not isinstance(obj, dict):
            raise ImportFormatError(str(path), f"each line must be {what}, found {type_name(obj)}", line=number)
        if len(raw) <= limit and raw.isprintable() and "\\" not in raw:
            # without an escape every string of the object is as printable and as short as the
            # line: cleaning would give back the same values (most lines of most exports)
            yield Record(obj, path, number)
        else:
            yield Record(clean_imported_within(obj, where, number, "", limit), path, number)


def records_of(items: Any, path: str | Path, what: str = "a JSON object") -> Iterator[Record]:
    """A Record per element of a JSON list read from one document (element k is 'line' k)."""
    if not isinstance(items, list):
        raise ImportFormatError(str(path), f"expected a JSON list, found {type_name(items)}")
    for k, obj in enumerate(items, start=1):
        _at(path, k)
        if not isinstance(obj, dict):
            raise ImportFormatError(str(path), f"element {k} must be {what}, found {type_name(obj)}", line=k)
        yield Record(obj, path, k)


# --- CSV ---------------------------------------------------------------------------------------------


def csv_rows(path: str | Path, required: tuple[str, ...] = ()) -> Iterator[Record]:
    """A Record of strings per data row of a CSV file with a header; its line is where the row
    starts (a quoted cell may span lines). Missing `required` columns, rows with more cells than
    the header, fields over CSV_FIELD_LIMIT and other malformations raise ImportFormatError."""
    # the file a block at a time (memory flat in its size); each block but the last ends with a
    # newline, so its lines are those of the whole text (CRLF and lone CR ends included)
    source = itertools.chain.from_iterable(io.StringIO(text, newline="") for text, _ in text_blocks(path))
    previous = csv.field_size_limit()
    csv.field_size_limit(CSV_FIELD_LIMIT)
    try:
        reader = csv.reader(source)
        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise _csv_error(path, exc, 1) from None
        if not header:
            raise ImportFormatError(str(path), "empty file; expected a CSV header line")
        for col in required:
            if col not in header:
                raise ImportFormatError(str(path), f"missing column '{col}'", line=1, field=col)
        needed = max((header.index(col) + 1 for col in required), default=0)  # cells a row must have
        end = reader.line_num
        while True:
            start = end + 1
            _at(path, start)
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise _csv_error(path, exc, start) from None
            end = reader.line_num
            if not cells:
                continue
            if len(cells) > len(header):
                raise ImportFormatError(
                    str(path), f"{len(cells)} cells but the header has {len(header)} columns", line=start
                )
            if len(cells) < needed:  # a short row (a cut file, say) may lack only optional columns
                missing = next(col for col in required if header.index(col) >= len(cells))
                raise ImportFormatError(
                    str(path),
                    f"{len(cells)} cells but the header has {len(header)} columns: no '{missing}' "
                    "(is the file cut short?)",
                    line=start,
                    field=missing,
                )
            yield Record(dict(zip(header, cells)), path, start)
    finally:
        csv.field_size_limit(previous)


def _csv_error(path: str | Path, exc: csv.Error, line: int) -> ImportFormatError:
    if "field larger than field limit" in str(exc):
        return ImportFormatError(
            str(path), f"a field is longer than {CSV_FIELD_LIMIT:,} characters (the CSV field limit)", line=line
        )
    return ImportFormatError(str(path), f"unreadable CSV ({exc})", line=line)


# --- typed fields ------------------------------------------------------------------------------------


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class Record(Mapping[str, Any]):
    """One record of an outside file (a JSON object, a CSV row, or an object inside one) with getters
    that read a field strictly by its type. `prefix` names where the record sits in its line
    (``dialogue_dicts[0]``) so that errors name the full field. Getters with a `default` return it
    when the field is missing or null; without one, a missing field is an error."""

    def __init__(self, data: Mapping[str, Any], path: str | Path, line: int | None, prefix: str = ""):
        self.data, self.path, self.line, self.prefix = data, str(path), line, prefix

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __contains__(self, key: object) -> bool:  # the dict's own, much faster than Mapping's
        return key in self.data

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def field(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def error(self, message: str, key: str | None = None) -> ImportFormatError:
        """ImportFormatError naming this record's file, line and (prefixed) field `key`."""
        where = self.field(key) if key else self.prefix or None
        return ImportFormatError(self.path, message, line=self.line, field=where)

    def _get(self, key: str, default: Any) -> Any:
        value = self.data.get(key)
        if value is None:
            if default is _MISSING:
                raise self.error("missing" if key not in self.data else "must not be null", key)
            return _MISSING
        return value

    def text(self, key: str, default: Any = _MISSING, *, empty: bool = True) -> Any:
        """A string (not a number, list, object or null)."""
        value = self._get(key, default)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            raise self.error(f"expected text, found {type_name(value)}", key)
        if not empty and not value.strip():
            raise self.error("must not be empty", key)
        return value

    def ident(self, key: str, default: Any = _MISSING) -> Any:
        """An id: text or a whole number, returned as text (``12`` and ``"12"`` are the same id)."""
        value = self._get(key, default)
        if value is _MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.error(f"expected an id (text or a whole number), found {type_name(value)}", key)
        if isinstance(value, str) and not value.strip():
            raise self.error("must not be empty", key)
        return str(value)

    def boolean(self, key: str, default: Any = _MISSING) -> Any:
        """true or false: not "false", 0, NaN or a list."""
        value = self._get(key, default)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            raise self.error(f"expected true or false, found {type_name(value)}", key)
        return value

    def integer(
        self, key: str, default: Any = _MISSING, *, minimum: int | None = None, maximum: int | None = None
    ) -> Any:
        """A whole number (a float only when whole; never a boolean or text) within the bounds."""
        value = self._get(key, default)
        if value is _MISSING:
            return default
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"expected a whole number, found {type_name(value)}", key)
        return self._bounded(key, value, minimum, maximum, -INT_LIMIT, INT_LIMIT)

    def number(
        self, key: str, default: Any = _MISSING, *, minimum: float | None = None, maximum: float | None = None
    ) -> Any:
        """A finite number (never a boolean, text, NaN or infinity) within the bounds."""
        value = self._get(key, default)
        if value is _MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"expected a number, found {type_name(value)}", key)
        if isinstance(value, int) and abs(value) > INT_LIMIT:
            raise self.error(f"the number {value} is out of range", key)
        value = float(value)
        if not math.isfinite(value):
            raise self.error(f"expected a finite number, found {value}", key)
        return self._bounded(key, value, minimum, maximum, None, None)

    def _bounded(self, key: str, value: Any, low: Any, high: Any, floor: Any, ceiling: Any) -> Any:
        low = floor if low is None else low
        high = ceiling if high is None else high
        if (low is not None and value < low) or (high is not None and value > high):
            span = f"{low if low is not None else '-∞'}..{high if high is not None else '∞'}"
            shown = value if abs(value) < 1e15 else f"{value:.3g}"
            raise self.error(f"{shown} is out of range ({span})", key)
        return value

    def array(self, key: str, default: Any = _MISSING) -> Any:
        """A JSON list (a string is not a list of characters)."""
        value = self._get(key, default)
        if value is _MISSING:
            return default
        if not isinstance(value, list):
            raise self.error(f"expected a list, found {type_name(value)}", key)
        return value

    def texts(self, key: str, default: Any = _MISSING) -> Any:
        """A list of texts (ids as whole numbers are read as text)."""
        value = self.array(key, default)
        if value is default:
            return default
        out = []
        for k, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                raise self.error(f"expected text, found {type_name(item)}", f"{key}[{k}]")
            out.append(str(item))
        return out

    def record(self, key: str, default: Any = _MISSING) -> Any:
        """A nested JSON object, as a Record."""
        value = self._get(key, default)
        if value is _MISSING:
            return default
        if not isinstance(value, dict):
            raise self.error(f"expected an object, found {type_name(value)}", key)
        return Record(value, self.path, self.line, self.field(key))

    def records(self, key: str, default: Any = _MISSING) -> Any:
        """A list of JSON objects, as Records (``convo[3]``)."""
        value = self.array(key, default)
        if value is default:
            return default
        out = []
        for k, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.error(f"expected an object, found {type_name(item)}", f"{key}[{k}]")
            out.append(Record(item, self.path, self.line, self.field(f"{key}[{k}]")))
        return out


# --- ids ---------------------------------------------------------------------------------------------


def fingerprint(value: Any) -> str:
    """A short hash of a record's content as parsed (whitespace does not matter; key order does,
    so a repeat with its keys reordered counts as other content: an error, never a silent merge)."""
    return hashlib.blake2b(repr(value).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class UniqueIds:
    """The ids of one kind (`what`, e.g. "conversation id") in one file.

    ``add(id, line, content)`` is True for a new id; False for an exact repeat of an earlier record
    (same id, same content: the caller skips it; a note says so); an id reused for other content is
    an error naming both lines."""

    def __init__(self, path: str | Path, what: str, field: str | None = None, *, repeats_expected: bool = False):
        # repeats_expected: the format repeats ids by design (an ACUTE dialogue in several pairs): no note
        self.path, self.what, self.field, self.quiet = str(path), what, field, repeats_expected
        self.seen: dict[str, tuple[int | None, str]] = {}
        self.repeats = 0

    def add(self, ident: str, line: int | None, content: Any = None) -> bool:
        mark = fingerprint(content)
        if ident not in self.seen:
            self.seen[ident] = (line, mark)
            return True
        first, earlier = self.seen[ident]
        if earlier != mark:
            first_at = f"line {first}" if first is not None else "earlier"
            raise ImportFormatError(
                self.path,
                f"{self.what} {ident!r} was used for other content on {first_at}; ids must be unique",
                line=line,
                field=self.field,
            )
        self.repeats += 1
        if self.repeats == 1 and not self.quiet:
            note(f"{self.path}: line {line} repeats line {first} exactly ({self.what} {ident!r}); read once")
        return False

    def finish(self) -> None:
        """Note the number of exact repeats beyond the first one named."""
        if self.repeats > 1 and not self.quiet:
            note(f"{self.path}: {self.repeats} lines repeat earlier ones exactly ({self.what}s); each read once")
