"""Issue 10, part 4: the report states the answer, in tables for people, traceable to report.json.

The demo studies are made and completed by a simulated crowd with the commands a user runs; the
HTML is then read as a browser gets it. Studies of ten systems are reported with `dialeval report`
in a subprocess, whose terminal output must carry no warning.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from dialeval import registry
from dialeval.demo import demo_methods
from dialeval.records import DA_CRITERIA, Annotator, Conversation, Dataset, Judgment, Turn, Unit

DIALEVAL = [sys.executable, "-m", "dialeval.cli"]
DEMO = demo_methods()  # every method with a demo study (the registry's Method.demo), as `dialeval demo` makes them


class Page(HTMLParser):
    """The visible text of a page (no <style>/<script>), its tables' data-key, and the answer items."""

    def __init__(self):
        super().__init__()
        self.text: list[str] = []
        self.table_keys: list[str | None] = []
        self.answer: list[str] = []
        self.headers: dict[str, list[str]] = {}
        self.rows: dict[str, list[list[str]]] = {}
        self._td: list[str] | None = None
        self._skip = 0
        self._in_answer = False
        self._li: list[str] | None = None
        self._table: str | None = None
        self._th: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in ("style", "script"):
            self._skip += 1
        if tag == "table":
            self._table = attrs.get("data-key")
            self.table_keys.append(self._table)
            self.headers.setdefault(self._table or "", [])
        if tag == "th" and self._table is not None:
            self._th = []
        if tag == "tr" and self._table is not None:
            self.rows.setdefault(self._table, []).append([])
        if tag == "td" and self._table is not None:
            self._td = []
        if tag == "ul" and attrs.get("class") == "answer":
            self._in_answer = True
        if tag == "li" and self._in_answer:
            self._li = []

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self._skip -= 1
        if tag == "td" and self._td is not None:
            self.rows[self._table or ""][-1].append("".join(self._td).strip())
            self._td = None
        if tag == "th" and self._th is not None:
            self.headers[self._table or ""].append("".join(self._th).strip())
            self._th = None
        if tag == "table":
            self._table = None
        if tag == "li" and self._li is not None:
            self.answer.append("".join(self._li).strip())
            self._li = None
        if tag == "ul":
            self._in_answer = False

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        if self._li is not None:
            self._li.append(data)
        if self._th is not None:
            self._th.append(data)
        if self._td is not None:
            self._td.append(data)


def read_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def resolve(report: dict, key: str) -> list:
    """The values at a data-key path: 'a.b', 'a[2].b', 'a[*].b' (every row); '.' is the top level."""
    if key == ".":
        return [report]
    values = [report]
    for part in re.findall(r"[^.\[\]]+|\[\*\]|\[\d+\]", key):
        nxt = []
        for v in values:
            if part == "[*]":
                assert isinstance(v, list), key
                nxt.extend(v)
            elif part.startswith("["):
                nxt.append(v[int(part[1:-1])])
            else:
                assert isinstance(v, dict) and part in v, f"{key}: no '{part}' in report.json"
                nxt.append(v[part])
        values = nxt
    return values


@pytest.fixture(scope="module")
def demo(completed_demo):
    """The suite's completed demo (tests/conftest.py): `dialeval demo --simulate 8 --no-serve` in a
    subprocess, as a user runs it."""
    return completed_demo


@pytest.mark.parametrize("method", DEMO)
def test_html_has_no_json_and_every_table_names_its_key(demo, method):
    html = demo / method / "report" / "index.html"
    report = json.loads((demo / method / "report" / "report.json").read_text())
    page = read_page(html)
    text = "".join(page.text)
    assert "{" not in text and "[" not in text, re.findall(r".{40}[\[{].{40}", text)[:3]
    assert page.table_keys and all(page.table_keys), "a table without data-key"
    for key in page.table_keys:
        assert resolve(report, key), key
    # Numbers for people, cell by cell: no 16-digit floats, no counts written as 29.0.
    long_numbers = [t for t in page.text if re.fullmatch(r"\s*-?[\d,]*\.\d{4,}\s*", t)]
    assert not long_numbers, long_numbers[:3]
    counts = {
        "n",
        "wins",
        "losses",
        "ties",
        "draws",
        "wins a",
        "wins b",
        "judgments",
        "items",
        "annotations",
        "opponents",
    }
    for key, header in page.headers.items():
        for i, name in enumerate(header):
            if name in counts:
                cells = [row[i] for row in page.rows.get(key, []) if len(row) == len(header)]
                assert all(re.fullmatch(r"[\d,]+|–", c) for c in cells), (key, name, cells[:5])


@pytest.mark.parametrize("method", DEMO)
def test_report_states_the_answer_first(demo, method):
    report = json.loads((demo / method / "report" / "report.json").read_text())
    page = read_page(demo / method / "report" / "index.html")
    html = (demo / method / "report" / "index.html").read_text()
    assert html.index('id="answer"') < html.index('id="systems"') < html.index("<table")
    assert page.answer == report["answer"]["summary"]
    best = report["systems"][0]["name"]
    assert best in page.answer[0]
    for pair in report["answer"]["pairs"]:
        if pair.get("decided_by") == "interval":  # a leaderboard: separated by its intervals (arena)
            if pair["decided"]:
                assert any(s.startswith(f"{pair['winner']} is rated above") for s in page.answer), pair
            else:
                said = [s for s in page.answer if s.startswith(f"{pair['winner']} vs {pair['loser']} is undecided")]
                assert all("intervals overlapping" in s for s in said), said
                assert said or any("more pairs are undecided" in s for s in page.answer), pair
            continue
        if pair["decided"]:
            assert any(
                s.startswith(f"{pair['winner']} is preferred") and f"to {pair['loser']} (" in s for s in page.answer
            ), pair
        else:
            said = [s for s in page.answer if s.startswith(f"{pair['winner']} vs {pair['loser']} is undecided")]
            assert said or any("more pairs are undecided" in s for s in page.answer), pair
            for s in said:
                assert "more would be needed" in s or "estimate" in s
    assert report["answer"]["limits"].startswith("Limits:")
    assert report["answer"]["limits"] in html.replace("&#39;", "'")


@pytest.mark.parametrize("method", DEMO)
def test_every_report_has_its_annotator_model_section(demo, method):
    """Every method's report says what its annotator model found (or why there is none), and the
    page shows it as tables for people."""
    report = json.loads((demo / method / "report" / "report.json").read_text())
    section = report["annotator_model"]
    assert section
    page = read_page(demo / method / "report" / "index.html")
    assert any(k.startswith("annotator_model") for k in page.table_keys), page.table_keys
    if registry.get(method).paired:  # a choice between two systems: the pairwise annotator model
        board = section["pairwise"]["leaderboard"]
        assert {r["name"] for r in board} == {s["name"] for s in report["systems"]}
        assert all("weighted_rating" in r for r in board)
        assert "flagged" in section["pairwise"]["screening"]


def test_acute_has_its_a_a_check(demo):
    report = json.loads((demo / "acute" / "report" / "report.json").read_text())
    aa = report["aa_test"]
    assert aa and aa["n"] > 0 and "check" in aa and 0 <= aa["rate"] <= 1
    assert "A/A check" in (demo / "acute" / "report" / "index.html").read_text()


@pytest.mark.parametrize("method", ["acute", "pairwise-turn"])
def test_grid_is_in_rank_order(demo, method):
    report = json.loads((demo / method / "report" / "report.json").read_text())
    page = read_page(demo / method / "report" / "index.html")
    order = [s["name"] for s in report["systems"]]
    assert page.headers["grid"][1:] == order


def _decimals(cell: str) -> int:
    return len(cell.rsplit(".", 1)[1]) if "." in cell else 0


@pytest.mark.parametrize("method", DEMO)
def test_interval_bounds_are_written_like_their_estimate(demo, method):
    """In every table of every demo report, an interval's bounds (ci low, ci high, sandwich low...)
    have as many decimals as the estimate beside them when both are on one scale: never "982.050"
    beside "1,012.9"."""
    page = read_page(demo / method / "report" / "index.html")
    checked = 0
    for key, header in page.headers.items():
        for estimate in ("score", "rating", "mean", "rate", "win rate"):
            if estimate not in header or "ci low" not in header:
                continue
            cols = [header.index(name) for name in (estimate, "ci low", "ci high")]
            for row in page.rows.get(key, []):
                cells = [row[i].replace(",", "") for i in cols if i < len(row)]
                numbers = [c for c in cells if re.fullmatch(r"-?\d+(\.\d+)?", c)]
                if len(numbers) == 3 and max(abs(float(c)) for c in numbers) < 10 * min(
                    abs(float(c)) or 1 for c in numbers
                ):
                    assert len({_decimals(c) for c in numbers}) == 1, (key, row)
                    checked += 1
    if method == "arena":
        assert checked > 0  # the leaderboard has scores with intervals


def test_a_bound_that_stays_under_1000_takes_its_estimates_decimals():
    from dialeval.report.render import records_table

    rows = [
        {"name": "a", "score": 1012.94, "ci_low": 999.41, "ci_high": 1030.2, "share": 0.25},
        {"name": "b", "score": 987.06, "ci_low": 970.88, "ci_high": 999.9, "share": 0.75},
    ]
    html = records_table("systems", rows)
    for text in ("1,012.9", "999.4", "1,030.2", "987.1", "970.9", "999.9", "0.250", "0.750"):
        assert f">{text}<" in html, text
    assert "999.410" not in html


# -- ten systems -----------------------------------------------------------------------------------------------
def _store_dataset(folder: Path, dataset: Dataset, bots: list[str]) -> None:
    from dialeval.study import open_study, write_study_file

    write_study_file(
        folder,
        {
            "name": folder.name,
            "method": dataset.method,
            "bots": [{"name": b, "type": "imported"} for b in bots],
            "imported_from": {"format": "test", "path": "synthetic"},
        },
    )
    opened = open_study(folder)
    try:
        opened.store.save_dataset(opened.id, dataset)
    finally:
        opened.close()


def ten_bot_acute() -> tuple[Dataset, list[str]]:
    rng = random.Random(3)
    bots = [f"system-{chr(97 + k)}-with-a-long-name" for k in range(10)]
    ds = Dataset(method="acute")
    for b in bots:
        for i in range(4):
            ds.conversations.append(
                Conversation(id=f"{b}-{i}", bots=[b], turns=[Turn("human", "Hi!"), Turn("bot", "hello", bot=b)])
            )
    for w in range(40):
        ds.annotators.append(Annotator(id=f"w{w}"))
    k = 0
    for i, a in enumerate(bots):
        for j, b in enumerate(bots):
            if j <= i:
                continue
            for _ in range(6):
                ca, cb = f"{a}-{rng.randrange(4)}", f"{b}-{rng.randrange(4)}"
                uid = f"u{k}"
                ds.units.append(
                    Unit(id=uid, kind="acute", conversation_ids=[ca, cb], payload={"speakers_to_eval": [a, b]})
                )
                a_wins = rng.random() < 0.5 + 0.04 * (j - i)
                w, l_ = (ca, cb) if a_wins else (cb, ca)
                ds.judgments.append(
                    Judgment(
                        annotator_id=f"w{k % 40}",
                        unit_id=uid,
                        question="preference",
                        value={"winner": w, "loser": l_},
                        justification="reads better",
                        elapsed_s=60.0,
                        shown_order=[ca, cb],
                    )
                )
                k += 1
    return ds, bots


def ten_bot_da() -> tuple[Dataset, list[str]]:
    rng = random.Random(5)
    bots = [f"model-{k:02d}-large" for k in range(10)]
    ds = Dataset(method="direct-assessment")
    for w in range(12):
        ann = f"w{w}"
        ds.annotators.append(Annotator(id=ann))
        for system in [*bots, "qc"]:
            cid = f"{ann}-{system}"
            ds.conversations.append(Conversation(id=cid, bots=[system], turns=[], meta={"qc": system == "qc"}))
            level = 10 if system == "qc" else 40 + 4 * bots.index(system)
            value = {c: float(min(100, max(0, level + rng.gauss(0, 12)))) for c in DA_CRITERIA}
            value["robotic"] = 100.0 - value["robotic"]
            value["repetitive"] = 100.0 - value["repetitive"]
            ds.judgments.append(
                Judgment(
                    annotator_id=ann,
                    unit_id=f"hit-{ann}",
                    question="ratings",
                    value=value,
                    conversation_id=cid,
                    elapsed_s=300.0,
                    meta={"system": system, "qc": system == "qc"},
                )
            )
    return ds, [*bots, "qc"]


@pytest.mark.parametrize("make", [ten_bot_acute, ten_bot_da])
def test_ten_systems_report_without_warnings(tmp_path, make):
    dataset, bots = make()
    folder = tmp_path / "ten"
    _store_dataset(folder, dataset, bots)
    result = subprocess.run(
        [*DIALEVAL, "report", str(folder)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr  # no matplotlib or pandas warning reaches the terminal
    assert "Warning" not in result.stdout
    page = read_page(folder / "report" / "index.html")
    text = "".join(page.text)
    assert "{" not in text and "[" not in text
    plots = sorted((folder / "report" / "plots").glob("*.svg"))
    assert plots


def test_methods_paragraph_claims_onboarding_only_for_methods_that_run_it():
    """Pages without an onboarding check (Method.onboarding_check false: Spot The Bot, SM, DA, the
    arena): the default `onboarding.enabled` must not make the report say annotators passed one."""
    from dialeval.report.methods_text import methods_paragraph

    counts = {"annotators": 3, "judgments": 9, "units": 3, "conversations": 3, "bots": ["a", "b"]}
    config = {"onboarding": {"enabled": True, "on_fail": "block"}}
    acute = {**config, "protocol": {"onboarding_weak_bot": "repeat"}}
    assert "onboarding check" in methods_paragraph("acute", counts, acute)
    # ACUTE without a weak bot runs no onboarding check (and `enabled: true` said so is refused)
    assert "onboarding check" not in methods_paragraph("acute", counts, config)
    for method in registry.ids(collectable=True):
        if method != "acute":  # ACUTE's own case above
            runs = registry.get(method).onboarding_check
            assert ("onboarding check" in methods_paragraph(method, counts, config)) == runs, method


def test_methods_paragraph_claims_the_chat_filters_only_where_people_chat():
    """quality.worker_filters (on by default) reads annotators' live-chat messages: ACUTE, Spot The
    Bot and prompt-set annotators write none, so their reports must not say filters flagged them."""
    from dialeval.report.methods_text import methods_paragraph

    counts = {"annotators": 3, "judgments": 9, "units": 3, "conversations": 3, "bots": ["a", "b"]}
    config = {"quality": {"worker_filters": True}}
    for method in registry.ids(collectable=True):
        said = "own chat messages tripped the worker filters" in methods_paragraph(method, counts, config)
        assert said == registry.get(method).live, method
    assert "worker filters" not in methods_paragraph("single-model", counts, {"quality": {"worker_filters": False}})


@pytest.mark.parametrize("method", DEMO)
def test_report_json_fits_the_documented_schema(demo, method):
    """Fresh reports of every method fit the JSON Schema the docs publish for report.json
    (docs/reference/report-json/<method>.schema.json, written by scripts/gen_reference.py)."""
    gen = _gen_reference()
    report = json.loads((demo / method / "report" / "report.json").read_text())
    schema = json.loads((gen.REFERENCE / "report-json" / f"{method}.schema.json").read_text())
    assert schema["required"][:5] == ["method", "systems", "study", "filtered_annotators", "answer"]
    assert gen.validate(report, schema) == []
    # the check bites: a report without a contract key, or with a system of the wrong shape, is refused
    assert gen.validate({k: v for k, v in report.items() if k != "systems"}, schema) == ["$: missing key 'systems'"]
    broken = {**report, "systems": [{**report["systems"][0], "score": "high"}]}
    assert gen.validate(broken, schema) == ["$.systems[0].score: string, expected number or null"]
    # the robustness audit names who overtakes the first system, or null when no drop of votes does
    # (which of the two a demo run shows depends on its votes: a fresh clone's run saw null for ACUTE)
    top = (report.get("robustness") or {}).get("top")
    if isinstance(top, dict) and "overtaken_by" in top:
        for overtaken_by in (None, report["systems"][-1]["name"]):
            audited = {**report, "robustness": {**report["robustness"], "top": {**top, "overtaken_by": overtaken_by}}}
            assert gen.validate(audited, schema) == []


def _gen_reference():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / "gen_reference.py"
    spec = importlib.util.spec_from_file_location("gen_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
