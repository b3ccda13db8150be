"""A live study with real OpenAI-compatible endpoints, as a crowdworker meets it in Chromium on a
phone (390x844) and a laptop (issue 21): one endpoint down, one answering in long Markdown.

- A bot that fails never names itself: the worker reads "Model A/B could not answer; try again" in
  the arena (two models), "Your partner could not answer; try again" with one partner, never the
  bot's name, URL or error, and cannot vote on (or rate) the failed round; the admin page lists
  the failure per bot with its reason.
- A long LLM answer (~790 words of Markdown) is shown whole under the default limit; a reply over
  a study's `limits.bot_reply_chars` ends with "[answer shortened]", cut at a word boundary, and is
  counted on the admin page and in the report.
- Seed lines of corpus-seeded conversations are shown as given context, never as the evaluated
  speaker's (ACUTE self-chats) nor as either speaker's (Spot The Bot).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dialeval.study import open_study
from tests.bots.fake_openai_server import closed_port_url, long_markdown, start_fake_openai
from tests.e2e.test_pages import (  # noqa: F401  (device and new_page are fixtures)
    assignment_of,
    device,
    enter,
    new_page,
    openai_bot,
)
from tests.web.studies import make_stb_study
from tests.web.test_live_support import make_live_study

pytestmark = pytest.mark.browser

CUT_MARKER = " … [answer shortened]"  # what a worker reads at the end of a shortened reply
LEAKS = ("alpha", "beta", "127.0.0.1", "refused", "listening", "http")
DIALEVAL = str(Path(sys.executable).with_name("dialeval"))  # the installed command, as the README runs it


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([DIALEVAL, *map(str, args)], capture_output=True, text=True, timeout=120)


def admin_page(page, server, folder: Path, slug: str) -> None:
    token = (folder / ".admin-token").read_text().strip()
    page.goto(f"{server.url}/s/{slug}/admin?token={token}")
    page.wait_for_selector("h1")


def assignment_here(page, folder: Path):
    """The stored assignment of the task page shown (its id is in the page's action URLs)."""
    return assignment_of(folder, page.locator("#live").get_attribute("data-send-url"))


def send(page, text: str) -> None:
    page.wait_for_selector("#live[data-stage=chat]")
    page.fill("#composer textarea", text)
    page.click("#composer button")


def vote_by_hand(page) -> tuple[int, str]:
    """POST a vote as the page's own script would (CSRF header and all): (status, body)."""
    return tuple(
        page.evaluate(
            """async () => {
              const url = document.getElementById('live').dataset.sendUrl.replace(/send(\\?|$)/, 'vote$1');
              const r = await fetch(url, {method: 'POST', credentials: 'same-origin',
                headers: {'Content-Type': 'application/json', 'Accept': 'application/json',
                          'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content},
                body: JSON.stringify({winner: 'model_a', request_id: 'by-hand-vote'})});
              return [r.status, await r.text()];
            }"""
        )
    )


def test_arena_bot_failure_is_anonymous_and_not_votable(live_server, new_page, tmp_path, device):  # noqa: F811
    with start_fake_openai(reply=lambda body: long_markdown(750)) as url:
        folder = make_live_study(
            tmp_path / "arena",
            "arena",
            [openai_bot("alpha", url), openai_bot("beta", closed_port_url())],
            protocol={"turns": 1, "vote": "per-turn"},
            name="arena-down",
            annotation={"units_per_annotator": 1},
        )
        server = live_server([folder])
        page = new_page(device)
        enter(page, f"{server.url}/s/arena-down/")
        send(page, "How do I compare two chatbots?")
        box = page.locator("#bot-error")
        box.wait_for(state="visible", timeout=20000)
        sides = assignment_here(page, folder).state["sides"]
        side = ("Model A", "Model B")[sides.index("beta")]
        assert box.inner_text().startswith(f"{side} could not answer; try again.")
        assert page.locator("#bot-error [data-retry]").is_visible()
        assert box.bounding_box()["width"] <= page.viewport_size["width"]

        def no_leak() -> None:
            text = page.locator("main").inner_text()
            assert "Your partner could not" not in text  # two models: the notice names the side
            for word in LEAKS:
                assert word not in text.lower(), (word, text)
            assert page.locator("#choose-form").count() == 0  # nothing to vote on
            status, body = vote_by_hand(page)
            assert status >= 400 and "no replies to vote on" in body

        no_leak()
        page.reload()  # the stored notice is the same neutral one
        box.wait_for(state="visible")
        assert box.inner_text().startswith(f"{side} could not answer; try again.")
        no_leak()
        page.click("#bot-error [data-retry]")  # a retry fails again, as neutrally
        page.wait_for_function(
            "() => !document.querySelector('#bot-error').hidden && !document.querySelector('[data-retry]').disabled",
            timeout=20000,
        )
        no_leak()
        study = open_study(folder)
        try:
            assert not [j for j in study.store.load_dataset(study.id).judgments if j.question == "battle"]
        finally:
            study.close()

        admin = new_page("laptop")
        admin_page(admin, server, folder, "arena-down")
        row = admin.locator("#bot-incidents tr:has-text('beta')")
        assert "2× refused: nothing is listening at" in row.inner_text()
        assert admin.locator("#bot-incidents tr:has-text('alpha')").count() == 0


def test_single_partner_failure_is_neutral(live_server, new_page, tmp_path, device):  # noqa: F811
    folder = make_live_study(
        tmp_path / "sm",
        "single-model",
        [openai_bot("beta", closed_port_url())],
        protocol={"bot_turns": 2},
        name="sm-down",
        annotation={"units_per_annotator": 1},
    )
    server = live_server([folder])
    page = new_page(device)
    enter(page, f"{server.url}/s/sm-down/")  # the partner answers the opening "Hi!" at once: it fails
    box = page.locator("#bot-error")
    box.wait_for(state="visible", timeout=20000)
    assert box.inner_text().startswith("Your partner could not answer; try again.")
    text = page.locator("main").inner_text().lower()
    assert not [word for word in LEAKS if word in text], text
    assert page.locator("#rate-form").count() == 0  # nothing to rate


def _battle(page, server, slug: str) -> list[str]:
    """One arena battle of one message: the two replies as shown."""
    enter(page, f"{server.url}/s/{slug}/")
    send(page, "Explain how to evaluate a chatbot, in detail.")
    page.wait_for_selector("#choose-form", timeout=30000)
    return page.locator(".arena-round .candidate .text").all_inner_texts()


def test_long_llm_answers_are_whole_or_visibly_shortened(live_server, new_page, tmp_path, device):  # noqa: F811
    answer = long_markdown(750)
    assert 740 <= len(answer.split()) and len(answer) > 4000  # as long as the answers cut by the old default
    with start_fake_openai(reply=lambda body: answer) as url:
        bots = [openai_bot("alpha", url), openai_bot("beta", url)]
        whole = make_live_study(
            tmp_path / "whole", "arena", bots, protocol={"turns": 1}, name="arena-whole",
            annotation={"units_per_annotator": 1},
        )  # fmt: skip
        cut = make_live_study(
            tmp_path / "cut", "arena", bots, protocol={"turns": 1}, name="arena-cut",
            annotation={"units_per_annotator": 1},
        )  # fmt: skip
        data = yaml.safe_load((cut / "study.yaml").read_text())
        data["limits"] = {"bot_reply_chars": 1000}
        (cut / "study.yaml").write_text(yaml.safe_dump(data))
        server = live_server([whole, cut])

        # the default limit fits a long LLM answer: shown whole, no marker
        page = new_page(device)
        shown = _battle(page, server, "arena-whole")
        assert len(shown) == 2
        for text in shown:
            assert "measure first, then decide" in text and "answer shortened" not in text

        # a study limit below the answer: cut where a word ends, marked for the worker
        page = new_page(device)
        shown = _battle(page, server, "arena-cut")
        for text in shown:
            assert text.rstrip().endswith("[answer shortened]"), text[-80:]
            assert "measure first" not in text
        marker = page.locator(".arena-round .candidate .text").first
        assert marker.bounding_box()["width"] <= page.viewport_size["width"]
        stored = assignment_here(page, cut).state["pending"]["candidates"]
        for c in stored:
            head = c["text"].removesuffix(CUT_MARKER)
            assert c["text"].endswith(CUT_MARKER) and len(head) <= 1000
            assert answer.startswith(head) and answer[len(head)].isspace()  # a whole last word
        page.check("input[name=winner][value=tie]")
        page.click("#choose-form button[type=submit]")
        page.wait_for_selector("#next-form")
        page.click("#next-form button[type=submit]")
        page.wait_for_selector("#reveal", state="visible")  # the last vote is final: the names are shown
        page.click("#after-reveal")
        page.wait_for_url("**/done")

        admin = new_page("laptop")
        admin_page(admin, server, cut, "arena-cut")
        for bot in ("alpha", "beta"):
            cells = admin.locator(f"#bot-incidents tr:has-text('{bot}') td").all_inner_texts()
            assert cells[0] == bot and cells[1] == "0" and cells[3] == "1", cells
        if device == "laptop":  # the report counts them too (the CLI, as the README runs it)
            done = run_cli("report", cut)
            assert done.returncode == 0, done.stderr
            report = json.loads((cut / "report" / "report.json").read_text())
            assert report["shortened_replies"] == {"alpha": 1, "beta": 1}
            assert "Bot replies shortened" in (cut / "report" / "index.html").read_text()


# -- seeded conversations: the seed lines are context -----------------------------------------------------


@pytest.fixture(scope="module")
def seeded_acute(tmp_path_factory) -> tuple[Path, set[str]]:
    """An ACUTE self-chat study seeded from the corpus, generated once with the CLI (both devices read
    the same conversations): its folder and the seed lines' texts."""
    folder = tmp_path_factory.mktemp("seeded") / "acute"
    folder.mkdir()
    (folder / "study.yaml").write_text(
        "name: acute-seeded\nmethod: acute\nseed: 1\n"
        "bots:\n  - {name: eliza, type: eliza}\n  - {name: repeat, type: repeat}\n"
        "generation: {mode: self-chat, conversations: 1, turns: 3, seed_from_corpus: true}\n"
        "onboarding: {enabled: false}\nprotocol: {comparisons_per_unit: 1, onboarding_weak_bot: repeat}\n"
    )
    made = run_cli("generate", folder)
    assert made.returncode == 0, made.stdout + made.stderr
    study = open_study(folder)
    try:
        seeds = {t.text for c in study.store.load_dataset(study.id).conversations for t in c.turns if t.is_seed}
    finally:
        study.close()
    assert seeds
    return folder, seeds


def test_acute_self_chat_seed_lines_are_context(live_server, new_page, tmp_path, device, seeded_acute):  # noqa: F811
    folder = tmp_path / "acute"  # a copy per device: each server hands out the study's units afresh
    shutil.copytree(seeded_acute[0], folder)
    seeds = seeded_acute[1]
    server = live_server([folder])
    page = new_page(device)
    enter(page, f"{server.url}/s/acute-seeded/")
    page.wait_for_selector("#answer")
    if device == "laptop":  # the phone layout hides ACUTE's hints; each given line says so itself
        assert page.locator("#seed-hint").is_visible()
    assert page.locator("[data-seed] .who").first.is_visible()
    for side in page.locator("section.side").all():
        highlighted = [t.strip() for t in side.locator(".msg-eval .text").all_text_contents()]
        assert highlighted and not set(highlighted) & seeds, highlighted  # the bot's own lines only
        given = side.locator("[data-seed]")
        assert given.count() == 2 and set(t.strip() for t in given.locator(".text").all_text_contents()) <= seeds
        for k in range(2):
            item = given.nth(k)
            assert "msg-eval" not in (item.get_attribute("class") or "")
            assert "given" in item.locator(".who").text_content().lower()
            assert item.evaluate("e => getComputedStyle(e).borderTopStyle") == "dashed"  # visibly set apart


def test_spot_the_bot_opening_is_given_in_every_segment(live_server, new_page, tmp_path, device):  # noqa: F811
    folder = make_stb_study(tmp_path / "stb", bot_segments=2, human_segments=1, packages_per_annotator=1)
    server = live_server([folder])
    page = new_page(device)
    enter(page, f"{server.url}/s/stb-test/")
    for _ in range(3):  # every segment of the package, bot and human alike
        page.wait_for_selector("#answer")
        lines = page.locator("#segment li")
        for k in (0, 1):  # the opening exchange: given, attributed to neither speaker
            assert lines.nth(k).get_attribute("data-seed") is not None
            assert "Speaker" not in lines.nth(k).locator(".who").inner_text()
        assert lines.nth(2).get_attribute("data-seed") is None
        assert "Speaker" in lines.nth(2).locator(".who").inner_text()
        if page.url.endswith("/done"):
            break
        page.check("input[name=entity0][value=human]")
        page.check("input[name=entity1][value=bot]")
        for feature in ("fluency", "sensibleness", "specificity"):
            page.check(f"input[name={feature}][value=tie]")
        before = page.locator("#progress").inner_text()
        page.click("#submit")
        page.wait_for_function(
            "(b) => location.pathname.endsWith('/done') || (document.querySelector('#progress') || {}).innerText !== b",
            arg=before,
            timeout=20000,
        )
        page.wait_for_load_state()
        if page.url.endswith("/done"):
            break
    assert page.url.endswith("/done")
