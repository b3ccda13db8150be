"""How texts were entered (issue: crowdworkers who paste from an LLM): one annotator types the
justifications, another pastes them; the counts travel with each judgment, the admin page shows the
difference and flags the paster, and the report's `input_signals` says the same."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dialeval.study import open_study
from tests.e2e.test_e2e_acute import correct_choice
from tests.web.studies import make_acute_study

pytestmark = pytest.mark.browser

WHY = "the second speaker answers the question and asks one back"


def _session(page, server, folder, enter_text) -> None:
    page.goto(server.url + "/")
    page.click("text=Annotate (acute)")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_selector("text=Practice comparison")
    page.check(f"input[name=choice][value='{correct_choice(folder, page)}']")
    enter_text(page)
    page.click("#submit")
    for k in (1, 2):
        page.wait_for_selector(f"text=Comparison {k} of 2")
        page.check("input[name=choice][value='1']")
        enter_text(page)
        page.click("#submit")
    page.wait_for_selector("text=Thank you!")


def _typed(page) -> None:
    page.click("#justification")
    page.keyboard.type(WHY, delay=5)


def _pasted(page) -> None:
    page.click("#justification")
    page.evaluate("text => navigator.clipboard.writeText(text)", WHY)
    page.keyboard.press("Control+V")
    page.wait_for_function("() => document.querySelector('#justification').value.length > 0")


def test_a_pasted_justification_is_told_apart_from_a_typed_one(live_server, browser_page, tmp_path):
    folder = make_acute_study(tmp_path / "acute", comparisons=2)
    server = live_server([folder])
    typist = browser_page()
    _session(typist, server, folder, _typed)
    paster = browser_page()
    paster.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    _session(paster, server, folder, _pasted)

    study = open_study(folder)
    try:
        dataset = study.store.load_dataset(study.id)
    finally:
        study.close()
    signals = {}
    for j in dataset.judgments:
        signals.setdefault(j.annotator_id, []).append(j.meta["input"])
    assert len(signals) == 2
    kinds = sorted(sum(s["pasted"] for s in sig) for sig in signals.values())
    assert kinds[0] == 0 and kinds[1] == 3 * len(WHY)  # three justifications pasted whole
    assert all(s["chars"] == len(WHY) and s["active_ms"] >= 0 for sig in signals.values() for s in sig)

    admin = browser_page()
    admin.goto(server.admin_url("acute-test"))
    rows = admin.locator("#input-signals tbody tr")
    assert rows.count() == 2
    shares = sorted(rows.nth(k).locator("td").nth(4).inner_text() for k in range(2))
    assert shares == ["0%", "100%"]
    assert admin.locator("#input-signals tr.flagged").count() == 1
    assert "pasted 100%" in admin.locator("#input-signals tr.flagged").inner_text()

    done = subprocess.run(
        [sys.executable, "-m", "dialeval.cli", "report", str(folder)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((folder / "report" / "report.json").read_text())
    section = report["input_signals"]
    assert len(section["annotators"]) == 2 and len(section["flagged"]) == 1
    assert "input_signals" in (folder / "report" / "index.html").read_text()
