"""Any report value as HTML tables for people: never JSON, whatever the analysis puts in report.json.

The rules, so that a key added by any analysis renders without code here:
- a list of records is a table; a record's scalar fields are its columns; a field that is itself a
  record (e.g. `likert`, `in_range`) becomes its own small table with one row per record; a field
  that is a list of records (e.g. `per_turn`) becomes one small table per record; a short list of
  scalars is written inline ("1–3" for a range);
- a mapping of scalars is a two-column quantity/value table; a mapping of records is a table with
  one row per key; a mapping of ranked lists (`top_terms`) is a table with one column per key; a
  mapping of curves (`[[x, y], …]`) is a table with one column per curve;
- numbers: integers as integers, every other number of a column with the same decimals, p-values
  as "< 0.001" below that; booleans as yes/no; a missing value as "–".

Every table carries `data-key`, the report.json path it shows ("matchups", "matchups[*].in_range",
"matchups[2].per_turn"), also printed in its caption, so a reader (and a test) can trace each
number to one key.
"""

from __future__ import annotations

import math
import re
from html import escape
from typing import Any

MAX_ROWS = 300
FOLD_ROWS = 60  # a top-level table longer than this is folded (click to open)
FOLD_NESTED_ROWS = 20  # a nested one (a curve per pair) sooner
DASH = "–"
_COUNT_NAMES = re.compile(
    r"^(n|k|rank|turn|turns|wins|losses|ties|draws|count|items|annotations|judgments|conversations|pairs|"
    r"opponents|total|passed|failed|rated|rated_turns|first_side_wins|m|left_out_n|n_boot|n_bootstrap|"
    r"trueskill_shuffles|n_repeats|n_samples|seed|min|max|try|tries|weight_turn|weight_dialog|position)$"
    r"|^n_|_n$|^wins_|^wta_conversations|_judgments$|_annotators$|_conversations$|_needed(_sim|_approx)?$"
)
_P_NAMES = re.compile(r"^p$|^p_(adjusted|always_valid|value|corrected|holm|bonferroni)|_p$")
_NUMBER_TEXT = re.compile(r"^[<\s\d.,%–-]*\d[\d.,%]*$|^–$")  # right-aligned, kept on one line


# -- scalars ---------------------------------------------------------------------------------------------
def is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def is_count(name: str) -> bool:
    return bool(_COUNT_NAMES.search(str(name)))


def is_p(name: str) -> bool:
    return bool(_P_NAMES.search(str(name)))


def column_decimals(name: str, values: list[Any]) -> int | None:
    """Decimals for a column of numbers; None = integers. One choice per column: consistent digits."""
    numbers = [v for v in values if _is_number(v) and not _is_missing(v)]
    if not numbers:
        return None
    if all(isinstance(v, int) for v in numbers):
        return None
    if all(float(v).is_integer() for v in numbers) and (is_count(name) or name == "x"):
        return None
    largest = max(abs(float(v)) for v in numbers)
    return 3 if largest < 1000 else 1


_BOUND = re.compile(r"(^|[ _])(low|high|lower|upper)$")


def table_decimals(columns: list[str], values: dict[str, list[Any]], names: dict[str, str] | None = None) -> dict:
    """Decimals for each column of one table (column_decimals), except that an interval's bounds
    ("ci_low", "sandwich high") take the fewest decimals of the numeric columns on their scale
    (largest value within 10x of theirs): a bound is written like the estimate it brackets, not
    "982.050" beside "1,012.9" because it happened to stay under 1,000."""
    names = names or {}
    decimals = {c: column_decimals(names.get(c, c), values[c]) for c in columns}
    largest = {
        c: max(abs(float(v)) for v in values[c] if _is_number(v) and not _is_missing(v))
        for c in columns
        if decimals[c] is not None
    }
    for c in largest:
        if not _BOUND.search(c):
            continue
        peers = [d for d in largest if largest[d] and largest[c] and 0.1 <= largest[d] / largest[c] <= 10]
        fewest = [n for n in (decimals[d] for d in peers) if n is not None]
        decimals[c] = min(fewest, default=decimals[c])
    return decimals


def fmt(value: Any, name: str = "", decimals: int | None | str = "auto") -> str:
    """One value as text for people (see the module docstring)."""
    if _is_missing(value):
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if _is_number(value):
        if decimals == "auto":
            decimals = column_decimals(name, [value])
        if is_p(name) and not (isinstance(value, int)):
            return "< 0.001" if 0 <= value < 0.001 else f"{value:.3f}"
        if decimals is None:
            return f"{int(round(value)):,}"
        return f"{value:,.{decimals}f}"
    if isinstance(value, (list, tuple)) and all(is_scalar(v) for v in value):
        return inline_list(name, value)
    return DASH  # never reached for values routed through `render`; nothing is ever dumped as JSON


def inline_list(name: str, values: list | tuple) -> str:
    """A short list of scalars in words: a numeric pair as a range, else comma-separated."""
    if not values:
        return "none"
    if len(values) == 2 and all(_is_number(v) for v in values) and re.search(r"range|ci|turns|interval", name):
        return f"{fmt(values[0], name)}–{fmt(values[1], name)}"
    return ", ".join(fmt(v, name) for v in values)


def _inline(value: Any) -> bool:
    """Values written in one cell: scalars and short lists of scalars."""
    if is_scalar(value):
        return True
    return isinstance(value, (list, tuple)) and len(value) <= 8 and all(is_scalar(v) for v in value)


def _records(value: Any) -> bool:
    return isinstance(value, list) and len(value) > 0 and all(isinstance(v, dict) for v in value)


def label(name: str) -> str:
    return str(name).replace("_", " ")


# -- tables -------------------------------------------------------------------------------------------------
def human_key(key: str) -> str:
    """A data-key path in words for the caption ('matchups › row 3 › per_turn'): no brackets on the page."""
    if key == ".":
        return "top level"
    text = re.sub(r"\[\*\]", ".every row", key)
    text = re.sub(r"\[(\d+)\]", lambda m: f".row {int(m.group(1)) + 1}", text)
    return " › ".join(part for part in text.split(".") if part)


def html_table(
    key: str, header: list[str], rows: list[list[str]], numeric: list[bool] | None = None, note: str | None = None
) -> str:
    numeric = numeric or [False] * len(header)
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for row in rows[:MAX_ROWS]:
        cells = "".join(
            f'<td class="num">{escape(c)}</td>' if numeric[i] and _NUMBER_TEXT.match(c) else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    more = ""
    if len(rows) > MAX_ROWS:
        more = f'<p class="note">{len(rows) - MAX_ROWS} more rows in report.json ({escape(key)}).</p>'
    caption = (
        f"<caption>report.json: <code>{escape(human_key(key))}</code>{(' · ' + escape(note)) if note else ''}</caption>"
    )
    html = (
        f'<div class="scroll"><table data-key="{escape(key)}">{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{more}"
    )
    nested = "." in key or "[" in key
    if len(rows) > (FOLD_NESTED_ROWS if nested else FOLD_ROWS):
        # Long detail (a power curve, a histogram) stays one click away instead of filling the page.
        html = f"<details><summary>{len(rows)} rows: show the table</summary>{html}</details>"
    return html


def row_label(record: dict, index: int) -> str:
    for k in ("name", "system", "bot", "question", "left_out", "feature"):
        if isinstance(record.get(k), str):
            extra = record.get("metric") or record.get("feature") if k in ("name", "system") else None
            return f"{record[k]} ({extra})" if isinstance(extra, str) and extra != record[k] else record[k]
    if isinstance(record.get("a"), str) and isinstance(record.get("b"), str):
        text = f"{record['a']} vs {record['b']}"
        for k in ("metric", "feature", "quality"):
            if isinstance(record.get(k), str):
                text += f" ({record[k]})"
        return text
    return f"row {index + 1}"


def records_table(key: str, records: list[dict], skip: set[str] | frozenset[str] = frozenset()) -> str:
    """A list of records: one table of the inline fields, then the nested fields as their own tables."""
    columns: list[str] = []
    nested: list[str] = []
    for r in records:
        for k, v in r.items():
            if k in skip or k in columns or k in nested:
                continue
            (columns if _inline(v) else nested).append(k)
    # A field inline in one record and nested in another is nested everywhere.
    columns = [c for c in columns if all(_inline(r.get(c)) for r in records)]
    nested += [k for r in records for k in r if k not in columns and k not in nested and k not in skip]
    decimals = table_decimals(columns, {c: [r.get(c) for r in records] for c in columns})
    rows = [[fmt(r.get(c), c, decimals[c]) for c in columns] for r in records]
    numeric = [any(_is_number(r.get(c)) for r in records) for c in columns]
    out = [html_table(key, [label(c) for c in columns], rows, numeric)] if columns else []
    labels = [row_label(r, i) for i, r in enumerate(records)]
    for field in nested:
        values = [r.get(field) for r in records]
        if all(isinstance(v, dict) or v is None for v in values):
            out.append(_column_of_mappings(f"{key}[*].{field}", field, labels, values))
        else:
            for i, v in enumerate(values):
                if v not in (None, [], {}):
                    out.append(f"<h4>{escape(labels[i])}: {escape(label(field))}</h4>")
                    out.append(render(f"{key}[{i}].{field}", v, field))
    return "".join(out)


def _flatten(value: dict, prefix: str = "") -> dict[str, Any]:
    """Nested mappings of scalars as one level: {"engaging": {"mean": 3}} -> {"engaging mean": 3}."""
    flat: dict[str, Any] = {}
    for k, v in value.items():
        name = f"{prefix} {k}".strip()
        if isinstance(v, dict):
            flat.update(_flatten(v, name))
        else:
            flat[name] = v
    return flat


def _column_of_mappings(key: str, field: str, labels: list[str], values: list[dict | None]) -> str:
    """One record field that is a mapping, for every record: a table with a row per record."""
    flats = [_flatten(v) if isinstance(v, dict) else {} for v in values]
    if all(all(_inline(x) for x in f.values()) for f in flats):
        columns = list(dict.fromkeys(k for f in flats for k in f))
        decimals = table_decimals(
            columns, {c: [f.get(c) for f in flats] for c in columns}, names={c: c.split()[-1] for c in columns}
        )
        rows = [[lab] + [fmt(f.get(c), c.split()[-1], decimals[c]) for c in columns] for lab, f in zip(labels, flats)]
        numeric = [False] + [any(_is_number(f.get(c)) for f in flats) for c in columns]
        return f"<h4>{escape(label(field))}</h4>" + html_table(key, ["", *[label(c) for c in columns]], rows, numeric)
    parts = []
    for i, (lab, v) in enumerate(zip(labels, values)):
        if v:
            parts.append(f"<h4>{escape(lab)}: {escape(label(field))}</h4>")
            parts.append(render(key.replace("[*]", f"[{i}]"), v, field))
    return "".join(parts)


def _is_grid(value: Any) -> bool:
    if not (isinstance(value, dict) and isinstance(value.get("bots"), list) and isinstance(value.get("rates"), list)):
        return False
    n = len(value["bots"])
    return len(value["rates"]) == n and all(isinstance(r, list) and len(r) == n for r in value["rates"])


def grid_table(key: str, grid: dict, order: list[str] | None = None) -> str:
    """A win-rate grid (row over column) in the given order (rank order), with stars and n."""
    bots = grid["bots"]
    order = [b for b in (order or []) if b in bots] + [b for b in bots if b not in (order or [])]
    index = {b: i for i, b in enumerate(bots)}
    rows = []
    for a in order:
        cells = [a]
        for b in order:
            i, j = index[a], index[b]
            rate = grid["rates"][i][j]
            if a == b or _is_missing(rate):
                cells.append(DASH if a != b else "")
                continue
            p = (grid.get("p") or [[None] * len(bots)] * len(bots))[i][j]
            n = (grid.get("n") or [[None] * len(bots)] * len(bots))[i][j]
            stars = "" if _is_missing(p) else "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""
            cells.append(f"{rate:.0%}{stars}" + (f" (n={int(n)})" if _is_number(n) else ""))
        rows.append(cells)
    return html_table(
        key,
        ["row over column", *order],
        rows,
        [False] + [True] * len(order),
        note="rank order; * p < .05, ** p < .01, *** p < .001",
    )


def _is_curve(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(
            isinstance(p, (list, tuple)) and len(p) == 2 and all(_is_number(x) or x is None for x in p) for p in value
        )
    )


def _is_ranked(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str) for p in value)
    )


def mapping_table(key: str, value: dict, name: str = "") -> str:
    """A mapping: scalars as quantity/value rows; nested values rendered below, each under its name."""
    scalars = {k: v for k, v in value.items() if _inline(v)}
    others = {k: v for k, v in value.items() if not _inline(v)}
    out = []
    if scalars:
        rows = [[label(k), fmt(v, k)] for k, v in scalars.items()]
        out.append(html_table(key, ["quantity", "value"], rows, [False, True]))
    for k, v in others.items():
        if v in ([], {}):
            continue
        out.append(f"<h4>{escape(label(k))}</h4>")
        out.append(render(f"{key}.{k}", v, k))
    return "".join(out)


def render(key: str, value: Any, name: str = "", order: list[str] | None = None) -> str:
    """HTML for any report value at report.json path `key` (see the module docstring)."""
    if value is None or value == [] or value == {}:
        return '<p class="note">none</p>'
    if _is_grid(value):
        return grid_table(key, value, order)
    if _records(value):
        return records_table(key, value)
    if isinstance(value, dict):
        items = list(value.values())
        if (
            items
            and all(isinstance(v, dict) for v in items)
            and all(all(_inline(x) for x in _flatten(v).values()) for v in items)
        ):
            return _column_of_mappings(key, "", [str(k) for k in value], items).removeprefix("<h4></h4>")
        if items and all(_is_curve(v) for v in items):
            return curves_table(key, value)
        if items and all(_is_ranked(v) for v in items):
            return ranked_table(key, value)
        return mapping_table(key, value, name)
    if _is_curve(value):
        return curves_table(key, {name or "y": value})
    if isinstance(value, list) and all(isinstance(v, (list, tuple)) for v in value):
        rows = [[str(i + 1), inline_list(name, v)] for i, v in enumerate(value)]
        return html_table(key, ["#", label(name) or "values"], rows)
    if isinstance(value, list):
        if all(is_scalar(v) for v in value):
            return f'<p data-key="{escape(key)}">{escape(inline_list(name, value))}</p>'
        return "".join(render(f"{key}[{i}]", v, name) for i, v in enumerate(value))
    return f'<p data-key="{escape(key)}">{escape(fmt(value, name))}</p>'


def curves_table(key: str, curves: dict[str, list]) -> str:
    xs = sorted({p[0] for v in curves.values() for p in v if p[0] is not None})
    lookup = {k: {p[0]: p[1] for p in v} for k, v in curves.items()}
    x_dec = column_decimals("x", xs)
    y_dec = {k: column_decimals("y", [p[1] for p in v]) for k, v in curves.items()}
    rows = [
        [fmt(x, "x", x_dec)] + [fmt(lookup[k].get(x), "y", y_dec[k]) if x in lookup[k] else "" for k in curves]
        for x in xs
    ]
    return html_table(key, ["x", *curves], rows, [True] * (len(curves) + 1))


def ranked_table(key: str, ranked: dict[str, list]) -> str:
    depth = max(len(v) for v in ranked.values())
    rows = []
    for i in range(depth):
        row = [str(i + 1)]
        for v in ranked.values():
            if i < len(v):
                term, weight = v[i]
                row.append(f"{term} ({fmt(weight, 'weight', 3)})" if _is_number(weight) else str(term))
            else:
                row.append("")
        rows.append(row)
    return html_table(key, ["#", *ranked], rows)
