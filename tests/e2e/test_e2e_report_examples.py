"""The prompt-set report's example browser, made as a user makes it: `dialeval init prompts`, answers
imported with `dialeval import answers` (our documented example file plus hostile text), an LLM judge
(`dialeval judge`, a loopback OpenAI-compatible endpoint), `dialeval simulate` and its report. Then
index.html is read as a file (no script at all, nothing hostile turned into markup) and opened in
Chromium from disk: the items, their rendered Markdown and the filters that work without a script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from tests.bots.fake_openai_server import start_fake_openai

ROOT = Path(__file__).resolve().parents[2]
DIALEVAL = [sys.executable, "-m", "dialeval.cli"]
EXAMPLE_ANSWERS = ROOT / "docs" / "examples" / "prompt-answers.jsonl"
HOSTILE_CATEGORY = 'x"><b>cat</b>'
HOSTILE = (
    "<script>alert(1)</script> <img src=x onerror=alert(2)> [link](javascript:alert(3))\n\n"
    "| a | b |\n|---|---|\n| <svg onload=alert(4)> | **ok** |"
)
PROMPTS = [  # the example file's prompt ids, and one prompt of hostile text in a hostile category
    {"id": "c01", "prompt": "Write a Python function for Fibonacci numbers.", "category": "coding"},
    {"id": "c06", "prompt": "Show a small Markdown table of languages.", "category": "coding"},
    {"id": "a01", "prompt": "Three tips to drink more water?", "category": "advice"},
    {"id": "x01", "prompt": "<script>alert(5)</script> Say hi.", "category": HOSTILE_CATEGORY},
]


def run(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run([*DIALEVAL, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def longer_chosen(body: dict) -> str:
    """A judge that prefers the longer answer, in either side order (so it gives verdicts)."""
    text = next((m["content"] for m in body["messages"] if "[Answer A]" in str(m.get("content"))), None)
    if text is None:  # the endpoint check before the run
        return "OK"
    a = text.split("[Answer A]")[1].split("[Answer B]")[0]
    b = text.split("[Answer B]")[1].split("Question:")[0]
    return '{"winner": "A"}' if len(a) >= len(b) else '{"winner": "B"}'


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("examples")
    run("init", "prompts", "ev", cwd=tmp)
    folder = tmp / "ev"
    (folder / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PROMPTS), encoding="utf-8")
    hostile = [{"prompt_id": "x01", "system": s, "answer": f"{s}: {HOSTILE}"} for s in ("terse", "thorough")]
    (tmp / "hostile.jsonl").write_text("".join(json.dumps(h) + "\n" for h in hostile), encoding="utf-8")
    with start_fake_openai(reply=longer_chosen) as judge_url:
        data = yaml.safe_load((folder / "study.yaml").read_text())
        data["bots"] = [{"name": n, "type": "imported"} for n in ("terse", "thorough")]
        data["judges"] = [{"name": "j", "type": "openai", "options": {"base_url": str(judge_url), "model": "m"}}]
        data["onboarding"]["enabled"] = False
        data["protocol"].update({"prompts": "prompts.jsonl", "baseline": "terse", "annotations_per_item": 3})
        (folder / "study.yaml").write_text(yaml.safe_dump(data))
        run("import", "answers", EXAMPLE_ANSWERS, tmp / "hostile.jsonl", "ev", cwd=tmp)
        run("judge", "ev", "--bot", "j", cwd=tmp)
    run("simulate", "ev", "--annotators", "6", "--careless", "0", "--seed", "3", cwd=tmp)
    return folder


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_report_json_lists_the_judged_items_with_answers_votes_and_verdicts(study):
    report = json.loads((study / "report" / "report.json").read_text())
    examples = report["examples"]
    items = examples["items"]
    assert {i["prompt_id"] for i in items} == {p["id"] for p in PROMPTS}  # every item was judged
    assert examples["items_judged"] == examples["listed"] == len(items)
    assert examples["people_split"] == sum(i["people_split"] for i in items)
    for item in items:
        assert item["systems"] == ["terse", "thorough"]
        assert [a["system"] for a in item["answers"]] == item["systems"]
        assert len(item["votes"]) == sum(item["counts"].values()) == 3  # annotations_per_item people
        assert item["people_split"] == (len(item["counts"]) > 1)
        (judge,) = item["judges"]
        assert judge["judge"] == "j" and judge["verdict"] == "thorough"  # the longer answer, both orders
        assert judge["orders"] == {"terse": "thorough", "thorough": "thorough"}
        assert item["judge_disagrees"] == (item["majority"] not in (None, "thorough"))
    # disagreements first
    flags = [i["people_split"] or i["judge_disagrees"] for i in items]
    assert flags == sorted(flags, reverse=True)
    hostile = next(i for i in items if i["prompt_id"] == "x01")
    assert hostile["category"] == HOSTILE_CATEGORY and "<script>" in hostile["answers"][0]["turns"][0]["text"]


def test_the_html_has_no_script_and_renders_hostile_text_as_text(study):
    page = (study / "report" / "index.html").read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(page)
    tags = parser.tags
    assert not [t for t, _ in tags if t in ("script", "img", "svg", "iframe")]  # a static page, and no remote image
    assert not [(t, a) for t, a in tags for k in a if k.lower().startswith("on")]
    assert not [a for t, a in tags if t == "a" and "javascript" in (a.get("href") or "")]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;script&gt;alert(5)&lt;/script&gt;" in page
    assert "<b>cat</b>" not in page and "x&quot;&gt;&lt;b&gt;cat&lt;/b&gt;" in page


def test_the_example_browser_in_chromium(study, browser_page):
    page = browser_page()
    page.goto((study / "report" / "index.html").resolve().as_uri())
    report = json.loads((study / "report" / "report.json").read_text())
    items = {i["prompt_id"]: i for i in report["examples"]["items"]}
    details = page.locator("details.ex-item")
    assert details.count() == len(items)
    shown = lambda: sorted(  # noqa: E731
        page.eval_on_selector_all(
            "details.ex-item", "els => els.filter(e => e.offsetParent !== null).map(e => e.dataset.promptId)"
        )
    )
    assert shown() == sorted(items)
    # the answers as people saw them: Markdown made into elements inside each answer
    c01 = page.locator("details.ex-item[data-prompt-id=c01]")
    c01.locator("summary").click()
    thorough = c01.locator(".ex-answer").nth(1)
    assert thorough.locator("h4").inner_text() == "thorough"
    for element in ("pre code", "ul li", "table td", "strong"):
        assert thorough.locator(f".md {element}").count() > 0, element
    assert page.locator("details.ex-item[data-prompt-id=c06] .md table").count() == 2
    assert page.locator("details.ex-item[data-prompt-id=a01] .md ol li").count() == 3
    assert c01.locator(".ex-votes li").count() == 3
    assert c01.locator("table.ex-judges td").first.inner_text() == "j"
    # filters: by category, by disagreement, both at once; no script on the page
    assert page.locator("script").count() == 0
    page.get_by_label("advice (1)").check()
    assert shown() == ["a01"]
    page.get_by_label("every category (4)").check()
    split = sorted(p for p, i in items.items() if i["people_split"])
    page.locator("#ex-dis-split").check()
    assert shown() == split
    page.get_by_label("coding (2)").check()
    assert shown() == [p for p in split if items[p]["category"] == "coding"]
    page.locator("#ex-dis-judge").check()
    assert shown() == sorted(p for p, i in items.items() if i["judge_disagrees"] and i["category"] == "coding")
    page.get_by_label(f"{HOSTILE_CATEGORY} (1)").check()
    page.locator("#ex-dis-all").check()
    assert shown() == ["x01"]
    assert page.dialogs == []  # nothing hostile ran
    x01 = page.locator("details.ex-item[data-prompt-id=x01]")
    x01.locator("summary").click()
    assert "<script>alert(1)</script>" in x01.locator(".ex-answer").first.inner_text()
    assert x01.locator(".md table strong").count() == 2  # each answer's table renders around the escaped markup
