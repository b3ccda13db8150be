"""Tidy judgment tables: one row per judgment, for every method, and their export.

Columns of :func:`judgments_frame`, in order:

- ``method``, ``judgment_index`` (0-based position in ``dataset.judgments``)
- ``annotator_id``, ``annotator_platform`` (None when the annotator is not in the dataset)
- ``unit_id``, ``conversation_id``
- ``bots``: comma-joined bots judged: a unit's ``speakers_to_eval`` (ACUTE pair) when present, else
  the bots of the judged conversation, else of all the unit's conversations
- ``question``, ``value`` (the value as JSON text), ``justification``, ``elapsed_s``, ``created_at``,
  ``shown_order`` (JSON text), ``meta`` (the judgment's meta as JSON text, None when empty)
- ``annotator_flagged`` (bool), ``annotator_qc_status``, ``annotator_flag_reason``: from
  ``annotator.meta`` keys ``flagged``, ``qc_status`` and ``flag_reason`` / ``flag_reasons`` /
  ``filter_reasons`` (lists joined by ``;``). An annotator counts as flagged when ``flagged`` is
  true, when a reason is present or when ``qc_status`` is one of fail/failed/flagged/excluded
  (annotator_rules.qc_flags: a flag is shown, it does not filter).
- ``excluded_reason``: why the judgment is not counted by the analysis (``meta["excluded"]``: it was
  made on an assignment that expired unfinished, was given to another annotator, or was returned on
  the platform), None when it counts.
- ``value.<key>`` for every scalar key of dict values (str, int, float, bool, None), after the fixed
  columns, in order of first appearance. A key holding mixed kinds (e.g. ``0``/``1``/``"tie"``) is
  stored as text so that every export format can hold it.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from dialeval.annotator_rules import qc_flags
from dialeval.errors import DialevalError
from dialeval.records import Dataset

BASE_COLUMNS = [
    "method",
    "judgment_index",
    "annotator_id",
    "annotator_platform",
    "unit_id",
    "conversation_id",
    "bots",
    "question",
    "value",
    "justification",
    "elapsed_s",
    "created_at",
    "shown_order",
    "meta",
    "annotator_flagged",
    "annotator_qc_status",
    "annotator_flag_reason",
    "excluded_reason",
]
EXPORT_FORMATS = ("csv", "jsonl", "parquet")
_EXTENSIONS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, default=str)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _column_values(values: list[Any]) -> pd.Series:
    present = [v for v in values if v is not None]
    kinds = {type(v) for v in present}
    if not present:
        return pd.Series(values, dtype="object")
    if kinds == {bool}:
        return pd.Series(values, dtype="boolean")
    if kinds == {int}:
        return pd.Series(values, dtype="Int64")
    if kinds <= {int, float}:
        return pd.Series([float("nan") if v is None else float(v) for v in values], dtype="float64")
    if kinds == {str}:
        return pd.Series(values, dtype="object")
    return pd.Series([None if v is None else str(v) for v in values], dtype="object")


def _timestamps(values: list[datetime | None]) -> pd.Series:
    present = [v for v in values if v is not None]
    if not present:
        return pd.Series(pd.NaT, index=range(len(values)), dtype="datetime64[ns]")
    aware = any(v.tzinfo is not None for v in present)
    return pd.Series(pd.to_datetime(values, utc=aware))


def judgments_frame(dataset: Dataset) -> pd.DataFrame:
    """One row per judgment of `dataset` (columns in the module docstring)."""
    annotators = {a.id: a for a in dataset.annotators}
    units = {u.id: u for u in dataset.units}
    conversations = dataset.conversation_map()

    rows: list[dict[str, Any]] = []
    value_keys: list[str] = []
    for index, judgment in enumerate(dataset.judgments):
        annotator = annotators.get(judgment.annotator_id)
        unit = units.get(judgment.unit_id) if judgment.unit_id is not None else None
        bots: list[str] = []
        if unit is not None and unit.payload.get("speakers_to_eval"):
            bots = [str(b) for b in unit.payload["speakers_to_eval"]]
        elif judgment.conversation_id in conversations:
            bots = list(conversations[judgment.conversation_id].bots)
        elif unit is not None:
            for cid in unit.conversation_ids:
                for bot in conversations[cid].bots if cid in conversations else []:
                    if bot not in bots:
                        bots.append(bot)
        flagged, status, reason = qc_flags(annotator.meta if annotator else {})
        row: dict[str, Any] = {
            "method": dataset.method,
            "judgment_index": index,
            "annotator_id": judgment.annotator_id,
            "annotator_platform": annotator.platform if annotator else None,
            "unit_id": judgment.unit_id,
            "conversation_id": judgment.conversation_id,
            "bots": ",".join(bots),
            "question": judgment.question,
            "value": _json(judgment.value),
            "justification": judgment.justification,
            "elapsed_s": None if judgment.elapsed_s is None else float(judgment.elapsed_s),
            "created_at": judgment.created_at,
            "shown_order": _json(judgment.shown_order),
            "meta": _json(judgment.meta) if judgment.meta else None,
            "annotator_flagged": flagged,
            "annotator_qc_status": status,
            "annotator_flag_reason": reason,
            "excluded_reason": (judgment.meta or {}).get("excluded"),
        }
        if isinstance(judgment.value, dict):
            for key, item in judgment.value.items():
                if _is_scalar(item):
                    column = f"value.{key}"
                    row[column] = item
                    if column not in value_keys:
                        value_keys.append(column)
        rows.append(row)

    columns: dict[str, pd.Series] = {}
    for name in BASE_COLUMNS + value_keys:
        values = [row.get(name) for row in rows]
        if name == "created_at":
            columns[name] = _timestamps(values)
        elif name == "judgment_index":
            columns[name] = pd.Series(values, dtype="int64")
        elif name == "elapsed_s":
            columns[name] = pd.Series([float("nan") if v is None else v for v in values], dtype="float64")
        elif name == "annotator_flagged":
            columns[name] = pd.Series(values, dtype="bool")
        elif name.startswith("value."):
            columns[name] = _column_values(values)
        else:
            columns[name] = pd.Series(values, dtype="object")
    return pd.DataFrame(columns, columns=BASE_COLUMNS + value_keys)


def export_judgments(dataset: Dataset, path: str | Path, format: str | None = None) -> Path:
    """Write :func:`judgments_frame` of `dataset` to `path` as csv, jsonl or parquet.

    `format` defaults to the one named by the file extension (.csv, .jsonl/.ndjson, .parquet/.pq);
    an unknown format raises DialevalError. Datetimes are written as ISO 8601 in csv and jsonl.
    Text cells that a spreadsheet would run as a formula (starting with =, +, -, @, tab or carriage
    return) are written with a leading apostrophe in csv (see :func:`neutralise_formulas`).
    Returns the path.
    """
    path = Path(path)
    if format is None:
        format = _EXTENSIONS.get(path.suffix.lower())
        if format is None:
            raise DialevalError(
                f"cannot tell the export format of '{path}' from its extension; "
                f"use .csv, .jsonl or .parquet, or pass format= one of {', '.join(EXPORT_FORMATS)}"
            )
    format = format.lower()
    if format not in EXPORT_FORMATS:
        raise DialevalError(f"unknown export format '{format}'; choose one of {', '.join(EXPORT_FORMATS)}")
    frame = judgments_frame(dataset)
    path.parent.mkdir(parents=True, exist_ok=True)
    if format == "csv":
        frame = neutralise_formulas(frame)
        frame.to_csv(path, index=False, date_format="%Y-%m-%dT%H:%M:%S.%f%z")
    elif format == "jsonl":
        frame.to_json(path, orient="records", lines=True, date_format="iso", date_unit="us", force_ascii=False)
    else:
        try:
            import pyarrow  # noqa: F401  (the parquet writer pandas uses; not in the base install)
        except ImportError:
            raise DialevalError(
                "parquet export needs pyarrow: pip install 'dialeval[parquet]' (or export --format csv / jsonl)"
            ) from None
        frame.to_parquet(path, index=False)
    return path


FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(value: Any) -> Any:
    """A text cell made inert for spreadsheets (OWASP "CSV injection"): a leading apostrophe when it
    starts with a formula character; numbers and other values unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def neutralise_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text (object) columns are neutralised cell by cell."""
    out = frame.copy()
    for name in out.columns:
        if out[name].dtype == object:
            out[name] = out[name].map(neutralise_formula)
    return out
