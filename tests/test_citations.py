"""Papers are cited so that a reader can find them: authors and year (with the full reference in
docs/references.md), never by the file numbers of a private paper folder ("paper 001", "003 Table 1")
or by notes outside the repository (PROTOCOLS.md, DESIGN.md)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCANNED = [REPO / "src", REPO / "tests", REPO / "docs", REPO / "README.md", REPO / "CONTRIBUTING.md"]
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".html", ".txt", ".toml", ".js", ".css", ".sh", ".j2"}
_CONTEXT = (
    r"(?:,?\s*(?:§|Tables?\b|Figs?\.|Figures?\b|Appendix|Appendices|App\.|Eq\.)"  # 000 §4.1, 003 Table 1
    r"|'s\b|\s+(?:uses|does|gives)\b|[);,])"  # 003's tables, 001 uses, (002)
)
UNRESOLVABLE = re.compile(
    r"\bpapers?\s+0\d\d\b"  # "paper 001", "Paper 000's"
    r"|papers/0\d\d"  # a file of the paper folder
    r"|\bPROTOCOLS(?:\.md|\s+§)|\bDESIGN\.md"  # notes that are not in the repository
    r"|(?<![\w.,:/\"'-])00[0-4](?=" + _CONTEXT + ")"  # a bare file number: "003 Table 1", "(002)", "000 §4.1"
    r"|[\"']00[0-4][\"']",  # source="001"
    re.IGNORECASE,
)
# The references the code cites, each with its entry in docs/references.md.
CITED = ["Smith et al.", "Deriu et al.", "Ji et al.", "Li et al.", "Krippendorff"]


def files() -> list[Path]:
    out = []
    for root in SCANNED:
        paths = [root] if root.is_file() else sorted(root.rglob("*"))
        out += [p for p in paths if p.is_file() and p.suffix in SUFFIXES and "node_modules" not in p.parts]
    return [p for p in out if p != Path(__file__).resolve()]


def test_the_pattern_finds_what_it_should():
    found = ("as in paper 003", "Paper 000's filter", "(003 Table 1)", "000 §4.1", "(002)", 'source="001"')
    found += ("see PROTOCOLS.md §5", "PROTOCOLS §4", "DESIGN.md", "003's tables", "001 uses a chi-square")
    for text in found:
        assert UNRESOLVABLE.search(text), text
    for text in ("p < .001)", "1,000,000 votes", "Smith et al. 2022, §4.1", "0.001, 0.01", "seed 42, 000:x"):
        assert not UNRESOLVABLE.search(text), text


def test_no_reference_to_papers_by_file_number_or_to_outside_notes():
    found = []
    for path in files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if UNRESOLVABLE.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()[:100]}")
    assert not found, "cite as authors, year (docs/references.md):\n" + "\n".join(found)


def test_every_cited_work_is_in_the_reference_list():
    references = (REPO / "docs" / "references.md").read_text(encoding="utf-8")
    for name in CITED:
        assert name.split()[0] in references, name
