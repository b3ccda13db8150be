"""The report's figures: one SVG render each by default (the file and the page), PNG on request."""

from __future__ import annotations

import base64
import re

from dialeval.report.build import write_report

REPORT = {
    "method": "arena",
    "systems": [
        {"name": "a", "score": 1010.0, "ci_low": 990.0, "ci_high": 1030.0},
        {"name": "b", "score": 990.0, "ci_low": 970.0, "ci_high": 1010.0},
    ],
    "win_rates": {"a": {"b": 0.6}, "b": {"a": 0.4}},
    "study": {"name": "t", "dialeval_version": "0", "generated_at": "2026-01-01T00:00:00+00:00", "methods": ""},
    "answer": {"summary": ["a over b"], "limits": ""},
}


def _embedded(page: str) -> list[bytes]:
    return [base64.b64decode(data) for data in re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page)]


def test_svg_only_by_default_and_the_page_embeds_the_file_bytes(tmp_path):
    paths = write_report(REPORT, tmp_path)
    svgs = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert svgs == ["leaderboard.svg", "win-rates.svg"]
    page = paths["html"].read_text(encoding="utf-8")
    assert "image/png" not in page and "plots/leaderboard.svg" in page
    assert sorted(_embedded(page)) == sorted((tmp_path / "plots" / name).read_bytes() for name in svgs)
    # the same report gives the same bytes (no date, fixed ids)
    first = (tmp_path / "plots" / "leaderboard.svg").read_bytes()
    write_report(REPORT, tmp_path)
    assert (tmp_path / "plots" / "leaderboard.svg").read_bytes() == first


def test_png_on_request_and_an_older_png_is_not_left_behind(tmp_path):
    write_report(REPORT, tmp_path, png=True)
    png = tmp_path / "plots" / "leaderboard.png"
    assert png.read_bytes().startswith(b"\x89PNG") and (tmp_path / "plots" / "leaderboard.svg").exists()
    write_report(REPORT, tmp_path)
    assert not png.exists()
