"""Make the README's pictures (docs/screenshots/*.png) from the real demo.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots] [--keep DIR]

Creates the demo studies (``dialeval.demo.create_demo``: the bundled retrieval, ELIZA, repeat and
degraded bots) in a temporary folder, lets a small simulated crowd work on the acute study, serves
everything in this process (``dialeval.simulate.server.running_app``) and walks one annotator per
method through its page in headless Debian Chromium (Playwright, as the browser tests do):

    acute.png              two conversations side by side, a choice made, a justification typed
    pairwise-turn.png      a few turns into the chat, two candidate replies, one chosen
    single-model.png       a couple of bot replies, checkboxes ticked
    spot-the-bot.png       a segment with its speakers labelled and compared
    direct-assessment.png  after a chat of ten messages: the seven sliders
    arena.png              a message, both models' replies side by side, the vote just cast and
                           *Change my vote* still open (on a phone: from the stacked replies down)
    prompts.png            one prompt, two answers in rendered Markdown (a list, a code block, a
                           table, bold) and a vote; the study is made through the CLI from our own
                           answers, docs/examples/prompt-answers.jsonl (the bundled bots write no
                           Markdown); on a phone the fuller answer's tab is shown
    admin.png              the acute study's admin page after the simulated crowd's work
    report.png             the top of the acute study's report (report/index.html)

Nothing in the repository changes except the PNG files. Takes about 45 seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dialeval.demo import create_demo  # noqa: E402
from dialeval.methods.prompts.promptset import answer_id  # noqa: E402
from dialeval.simulate.crowd import simulate_study, write_study_report  # noqa: E402
from dialeval.simulate.server import running_app  # noqa: E402
from dialeval.store import work  # noqa: E402
from dialeval.study import open_study  # noqa: E402
from dialeval.web.served import slugify  # noqa: E402

CHROMIUM = os.environ.get("DIALEVAL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]  # as tests/e2e/conftest.py
VIEWPORT = {"width": 1366, "height": 768}  # a laptop's first screen
# Each annotator page is shot twice: on the laptop (<method>.png) and on a phone (<method>-phone.png).
DEVICES = {
    "": {"viewport": VIEWPORT},
    "-phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}
SUFFIX = ""  # set per device by main()

# What the annotator types: ordinary small talk, so the bots' answers look like a real session.
PW_MESSAGES = [
    "I'm a nurse, I work night shifts at the hospital. What do you do?",
    "That sounds nice. On my days off I mostly go hiking with my dog.",
    "Do you have any pets?",
]
SM_MESSAGES = [
    "Not bad, I just got back from a long walk on the beach. How was your day?",
    "I'm planning a trip to Japan next spring. Have you ever been?",
]
ARENA_MESSAGE = "What do you like to do on weekends?"
# The prompts shot: our example answers of two systems to three bundled prompts; the walk votes
# until the item of SHOWN_PROMPT comes up (its `thorough` answer has a list, code, a table, bold).
PROMPT_ANSWERS = ROOT / "docs" / "examples" / "prompt-answers.jsonl"
PROMPT_SYSTEMS = ("terse", "thorough")
SHOWN_PROMPT = "c01"
DA_TOPIC = "cooking"
DA_MESSAGES = [
    "Hi! I love cooking, especially Italian food.",
    "Last night I made fresh pasta for the first time.",
    "It took ages but it tasted much better than the dried kind.",
    "Do you like to cook?",
    "What is the best meal you have ever had?",
    "My grandmother taught me how to make a proper tomato sauce.",
    "The secret is to let it simmer for a few hours.",
    "I also want to learn how to bake bread.",
    "Have you ever tried making sourdough?",
    "Anyway, it was nice talking to you!",
]


T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - T0:5.1f}s] {msg}", flush=True)


def slug_of(folder: Path) -> str:
    study = open_study(folder)
    try:
        return slugify(study.config.name)
    finally:
        study.close()


def assignment(folder: Path, aid: int):
    study = open_study(folder)
    try:
        return work.get_assignment(study.store, aid)
    finally:
        study.close()


def aid_from(url: str) -> int:
    return int(url.split("/a/")[1].split("/")[0])


def enter(page, base: str, slug: str) -> None:
    """Study link -> start -> consent -> instructions -> the task."""
    page.goto(f"{base}/s/{slug}/")
    page.click("button:has-text('Start')")
    page.check("#agree")
    page.click("button:has-text('Continue')")
    page.click("#begin")
    page.wait_for_load_state()


def shoot(page, path: Path, full_page: bool = False) -> None:
    """Save the page: the whole page from its top (sticky bar where it belongs), or the viewport as scrolled."""
    path = path.with_name(path.stem + SUFFIX + path.suffix)
    if full_page:
        page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(300)  # let transitions settle
    page.screenshot(path=str(path), full_page=full_page)
    log(f"wrote {path}")


def scroll_to_show(page, selector: str, from_end: int = 1, above: int = 60) -> None:
    """Scroll so the top of the `from_end`-th last element matching `selector` sits just below the top bar."""
    page.evaluate(
        "([sel, k, above]) => { const all = document.querySelectorAll(sel);"
        " const e = all[Math.max(0, all.length - k)];"
        " window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY - above); }",
        [selector, from_end, above],
    )


def submit_and_wait(page, button: str) -> None:
    """Submit a task form (sent with fetch) and wait for the next item (its form action or the progress
    in the top bar changes) or the thank-you page."""
    key = "() => (document.querySelector('#answer') || {}).action + '|' + document.querySelector('.topbar').innerText"
    before = page.evaluate(key)
    page.click(button)
    page.wait_for_function(f"(before) => location.pathname.endsWith('/done') || ({key})() !== before", arg=before)
    page.wait_for_load_state()


def finished(page) -> bool:
    """True on the thank-you page (the annotator's work is done); then start as a new annotator."""
    return urlparse(page.url).path.endswith("/done")


def say(page, text: str, bot_selector: str = "#transcript .msg.bot") -> None:
    """Send a chat message and wait until the bot's answer is shown and the composer is free again."""
    before = page.locator(bot_selector).count()
    page.fill("#composer textarea", text)
    page.click("#composer button")
    page.locator(bot_selector).nth(before).wait_for()
    page.wait_for_selector("#composer textarea:not([disabled])")


def acute(page, base: str, folder: Path, out: Path) -> None:
    """Go through the comparisons until one pits the retrieval bot against another bot; pick retrieval."""
    enter(page, base, slug_of(folder))
    for _ in range(12):
        page.wait_for_selector("#answer")
        a = assignment(folder, aid_from(page.get_attribute("#answer", "action")))
        if a.payload.get("is_onboarding"):  # the practice comparison: the human conversation is right
            side = a.shown_order.index(a.payload["correct"]) + 1
            why = f"Speaker {side} answers like a real person would"
        else:
            bots = a.payload["speakers_to_eval"]
            conv = {bot: cid for bot, cid in zip(bots, a.conversation_ids, strict=True)}
            if "retrieval" in bots:
                other = next(b for b in bots if b != "retrieval")
                side = a.shown_order.index(conv["retrieval"]) + 1
                weakness = "only asks questions back" if other == "eliza" else "just repeats itself"
                why = (
                    f"Speaker {side} talks about real things and keeps the conversation going, "
                    f"Speaker {3 - side} {weakness}."
                )
                page.check(f"input[name=choice][value='{side}']")
                page.fill("#justification", why)
                shoot(page, out / "acute.png")
                return
            side, why = 1, "both are similar, Speaker 1 is a little more natural"
        page.check(f"input[name=choice][value='{side}']")
        page.fill("#justification", why)
        submit_and_wait(page, "#submit")
        if finished(page):
            page.context.clear_cookies()
            enter(page, base, slug_of(folder))
    raise RuntimeError("no acute comparison with the retrieval bot came up")


def pairwise_turn(page, base: str, folder: Path, out: Path) -> None:
    """Practice, then a few turns, always choosing the retrieval bot's reply; stop with two candidates shown."""
    from dialeval.protocols import onboarding_content as onb

    enter(page, base, slug_of(folder))
    if page.locator("text=Practice first").count():
        a = assignment(folder, aid_from(page.get_attribute("#live", "data-send-url")))
        for k, (step, order) in enumerate(zip(onb.STEPS, a.state["onboarding_orders"], strict=False)):
            page.check(f"input[name=step{k}][value='{order.index(step.good)}']")
        page.click("button:has-text('Check my answers')")
    for turn in range(len(PW_MESSAGES) + 1):
        page.wait_for_selector("#choose-form")
        a = assignment(folder, aid_from(page.get_attribute("#live", "data-send-url")))
        order = a.state["pending"]["order"]
        choice = order.index("retrieval") if "retrieval" in order else 0
        page.check(f"input[name=choice][value='{choice}']")
        page.fill("#justification", "it sounds like a real person and keeps the conversation going")
        if turn == len(PW_MESSAGES):
            shoot(page, out / "pairwise-turn.png")
            return
        page.click("#choose-form button[type=submit]")
        page.wait_for_selector("#composer textarea:not([disabled])")
        page.fill("#composer textarea", PW_MESSAGES[turn])
        page.click("#composer button")


def single_model(page, base: str, folder: Path, out: Path) -> None:
    """Chat with the retrieval bot (a new annotator until it is the one assigned), tick boxes per reply."""
    for _ in range(12):
        enter(page, base, slug_of(folder))
        page.wait_for_selector("#live")
        if assignment(folder, aid_from(page.get_attribute("#live", "data-send-url"))).payload["bot"] == "retrieval":
            break
        page.goto("about:blank")  # leave the chat page (its script would reload it) before forgetting the annotator
        page.context.clear_cookies()
    else:
        raise RuntimeError("the retrieval bot was never assigned in single-model")
    ticks = (["engaging"], ["humanlike"], ["engaging", "humanlike"])
    for turn, boxes in enumerate(ticks):
        page.wait_for_selector("#rate-form")
        for box in boxes:
            page.check(f"#rate-form input[value={box}]")
        if turn == len(ticks) - 1:
            shoot(page, out / "single-model.png")
            return
        page.click("#rate-form button[type=submit]")
        page.wait_for_selector("#composer textarea:not([disabled])")
        page.fill("#composer textarea", SM_MESSAGES[turn])
        page.keyboard.press("Enter")


def spot_the_bot(page, base: str, folder: Path, out: Path) -> None:
    """Label segments until a short one (two or three exchanges) with the retrieval bot comes up; the
    annotator takes the retrieval bot for a person and prefers it on every feature."""
    enter(page, base, slug_of(folder))
    for _ in range(25):
        page.wait_for_selector("#segment")
        a = assignment(folder, aid_from(page.get_attribute("#answer", "action")))
        done = set(a.state.get("done", []))
        seg = a.payload["segments"][next(i for p, i in enumerate(a.shown_order) if p not in done)]
        study = open_study(folder)
        try:
            turns = study.store.get_conversation(study.id, seg["conversation"]).turns
        finally:
            study.close()
        speaker = next((t.speaker for t in turns if t.bot == "retrieval"), None)
        if speaker in ("entity0", "entity1") and seg["exchanges"] <= 3:
            good = speaker[-1]
            page.check(f"input[name=entity{good}][value=human]")
            page.check(f"input[name=entity{1 - int(good)}][value=bot]")
            for feature in ("fluency", "sensibleness", "specificity"):
                page.check(f"input[name={feature}][value='{good}']")
            shoot(page, out / "spot-the-bot.png")
            return
        page.check("input[name=entity0][value=bot]")
        page.check("input[name=entity1][value=bot]")
        for feature in ("fluency", "sensibleness", "specificity"):
            page.check(f"input[name={feature}][value=tie]")
        submit_and_wait(page, "#submit")
        if finished(page):
            page.context.clear_cookies()
            enter(page, base, slug_of(folder))
    raise RuntimeError("no short Spot The Bot segment with the retrieval bot came up")


DA_RATINGS = {  # robotic, interesting, fun, consistent, fluent, repetitive, topic (what a person might give)
    "retrieval": (35, 70, 65, 45, 75, 20, 55),
    "eliza": (85, 25, 30, 55, 80, 70, 35),
}


def direct_assessment(page, base: str, folder: Path, out: Path) -> None:
    """Chat (ten messages, the study's minimum) until the conversation with the retrieval bot is rated."""
    enter(page, base, slug_of(folder))
    for _ in range(4):
        page.wait_for_selector("#topic-form")
        a = assignment(folder, aid_from(page.get_attribute("#topic-form", "action")))
        bot = a.shown_order[a.state["index"]]
        if page.locator("#topic").count():
            page.fill("#topic", DA_TOPIC)
        page.check("input[name=opinion][value=like]")
        page.click("#topic-form button[type=submit]")
        page.wait_for_selector("#composer textarea")
        for text in DA_MESSAGES:
            say(page, text)
        page.click("#end-chat-form button")
        page.wait_for_selector("#da-rate-form")
        for slider, value in zip(
            page.locator("[data-slider]").all(), DA_RATINGS.get(bot, DA_RATINGS["eliza"]), strict=False
        ):
            slider.fill(str(value))
        if bot == "retrieval":
            page.evaluate("document.querySelector('#da-rate-form').scrollIntoView({block: 'start'})")
            shoot(page, out / "direct-assessment.png")
            return
        page.click("#da-rate-form button[type=submit]")
    raise RuntimeError("no conversation with the retrieval bot came up")


def arena(page, base: str, folder: Path, out: Path) -> None:
    """A battle with the retrieval bot: one message, answered by both models, a vote for the retrieval
    bot; shot with the vote held (*Change my vote*). A new annotator until such a battle comes up and,
    on the phone, until its replies are short enough for the picture (see below)."""
    for _ in range(12):
        enter(page, base, slug_of(folder))
        page.wait_for_selector("#live[data-stage=chat]")
        a = assignment(folder, aid_from(page.get_attribute("#live", "data-send-url")))
        sides = list(a.state.get("sides") or a.shown_order or a.payload["bots"])
        if "retrieval" in sides:
            page.fill("#composer textarea", ARENA_MESSAGE)
            page.click("#composer button")
            page.wait_for_selector("#live[data-stage=vote]", timeout=20000)  # both replies streamed
            page.check(f"input[name=winner][value={'model_a' if sides[0] == 'retrieval' else 'model_b'}]")
            page.click("#choose-form button[type=submit]")
            page.wait_for_selector("#vote-status")  # the "voted" stage: the vote held, changeable
            # Shot inside the vote's 10 s change window. One round: on the laptop the whole page then
            # fits the first screen. The phone cannot show the message too: the stacked replies go just
            # under the bar, and a retrieval reply of several lines would push *Change my vote* off.
            if not SUFFIX:
                shoot(page, out / "arena.png")
                return
            scroll_to_show(page, "#transcript .arena-round")
            if page.evaluate(
                "document.querySelector('#choose-form button[type=submit]').getBoundingClientRect().bottom"
                " <= window.innerHeight"
            ):
                shoot(page, out / "arena.png")
                return
        page.goto("about:blank")  # leave the chat page (its script would reload it) before forgetting the annotator
        page.context.clear_cookies()
    raise RuntimeError("no arena battle with the retrieval bot (and replies that fit the phone) came up")


def markdown_study(folder: Path) -> Path:
    """A prompts study of our example answers, made as a user would: init, edit study.yaml, import."""
    import yaml

    cli = Path(sys.executable).with_name("dialeval")
    subprocess.run([str(cli), "init", "prompts", str(folder)], check=True, stdout=subprocess.DEVNULL)
    path = folder / "study.yaml"
    data = yaml.safe_load(path.read_text())
    data["name"] = "markdown-answers"
    data["bots"] = [{"name": name, "type": "imported"} for name in PROMPT_SYSTEMS]
    data["protocol"]["baseline"] = PROMPT_SYSTEMS[0]
    data["onboarding"]["enabled"] = False  # the shot is of a real item, not the practice one
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    subprocess.run(
        [str(cli), "import", "answers", str(PROMPT_ANSWERS), str(folder)], check=True, stdout=subprocess.DEVNULL
    )
    return folder


def prompts(page, base: str, folder: Path, out: Path) -> None:
    """Vote until the item of SHOWN_PROMPT comes up; choose the thorough answer, give a reason."""
    enter(page, base, slug_of(folder))
    for _ in range(6):
        page.wait_for_selector("#answer")
        a = assignment(folder, aid_from(page.get_attribute("#answer", "action")))
        letter = "AB"[a.shown_order.index(answer_id(PROMPT_SYSTEMS[1], a.payload["prompt_id"]))]
        page.check(f"input[name=choice][value={letter}]")
        if a.payload["prompt_id"] == SHOWN_PROMPT:
            page.fill("#justification", f"{letter} explains its code and checks it")
            if page.locator(f"#tab-{letter}").is_visible():  # the phone: one answer at a time, show this one
                page.click(f"#tab-{letter}")
            # from the prompt down: the answers' Markdown above the sticky vote on either screen
            scroll_to_show(page, "section.prompt .chat" if SUFFIX else "section.prompt", above=50)
            shoot(page, out / "prompts.png")
            return
        submit_and_wait(page, "#submit")
        if finished(page):
            page.context.clear_cookies()
            enter(page, base, slug_of(folder))
    raise RuntimeError(f"the item of prompt {SHOWN_PROMPT} never came up")


def admin(page, base: str, folder: Path, out: Path) -> None:
    token = (folder / ".admin-token").read_text().strip()
    page.goto(f"{base}/s/{slug_of(folder)}/admin?token={token}")
    page.wait_for_selector("#annotators")
    shoot(page, out / "admin.png")


def report(page, folder: Path, out: Path) -> None:
    page.goto((folder / "report" / "index.html").resolve().as_uri())
    page.wait_for_load_state("load")
    # the top of the report down to the end of its first figure (the win-rate grid)
    bottom = page.evaluate(
        "(() => { const img = document.querySelector('img, svg');"
        " const box = img && (img.closest('figure') || img);"
        " return box ? box.getBoundingClientRect().bottom + window.scrollY + 24 : 900; })()"
    )
    page.wait_for_timeout(300)
    page.screenshot(
        path=str(out / "report.png"),
        full_page=True,
        clip={"x": 0, "y": 0, "width": VIEWPORT["width"], "height": min(max(bottom, 600), 1400)},
    )
    log(f"wrote {out / 'report.png'}")


WALKS = {
    "acute": acute,
    "pairwise-turn": pairwise_turn,
    "single-model": single_model,
    "spot-the-bot": spot_the_bot,
    "direct-assessment": direct_assessment,
    "arena": arena,
    "prompts": prompts,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "screenshots"), help="where the PNG files go")
    ap.add_argument("--keep", help="make the demo in this folder and keep it (default: a temporary folder)")
    ap.add_argument("--annotators", type=int, default=16, help="simulated annotators on the acute study")
    ap.add_argument("--only", choices=sorted(WALKS), help="shoot one method's page only (no admin, no report)")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM} (apt-get install chromium)", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dialeval-screenshots-"))
    try:
        log(f"creating the demo in {tmp}")
        folders = {f.name: f for f in create_demo(tmp / "demo")}
        folders["prompts"] = markdown_study(tmp / "prompts-markdown")  # in place of the demo's own
        with running_app(list(folders.values())) as base:
            log(f"serving on {base}; a simulated crowd of {args.annotators} works on acute")
            acute_folder = folders["acute"]
            simulate_study(
                acute_folder,
                annotators=args.annotators,
                seed=0,
                base_url=base,
                slug=slug_of(acute_folder),
                abandon_p=0.0,
                double_submit_p=0.0,
            )
            write_study_report(acute_folder)
            log("report written")
            from playwright.sync_api import sync_playwright

            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                try:
                    global SUFFIX
                    for suffix, device in DEVICES.items():
                        SUFFIX = suffix
                        for method, walk in WALKS.items():
                            if args.only and method != args.only:
                                continue
                            ctx = browser.new_context(**device)
                            page = ctx.new_page()
                            page.on("dialog", lambda d: d.dismiss())
                            try:
                                walk(page, base, folders[method], out)
                            finally:
                                ctx.close()
                    SUFFIX = ""
                    ctx = browser.new_context(viewport=VIEWPORT)
                    page = ctx.new_page()
                    if args.only:
                        return 0
                    admin(page, base, acute_folder, out)
                    report(page, acute_folder, out)
                    ctx.close()
                finally:
                    browser.close()
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
