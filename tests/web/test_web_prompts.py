"""One annotator's prompt-set session through the real app (TestClient) on a real SQLite file: the
practice item, items showing one prompt and two answers with the reference and a criterion, refused
inputs, an attention check, and what is stored (sides as shown, both questions)."""

from __future__ import annotations

import re
import uuid
from html import unescape
from pathlib import Path

import pytest

from dialeval.store import work
from dialeval.web.app import create_app

from .conftest import Annotator
from .studies import make_prompts_study

PROMPTS = [
    {"id": f"q{i}", "prompt": f"Question number {i}?", "category": "c1" if i < 3 else "c2", "reference": f"ref {i}"}
    for i in range(5)
]


@pytest.fixture
def prompts_app(tmp_path: Path):
    answers = {s: {p["id"]: f"{s} answers {p['id']}" for p in PROMPTS} for s in ("base", "sys1", "sys2")}
    folder = make_prompts_study(
        tmp_path / "ps",
        PROMPTS,
        answers,
        baseline="base",
        items_per_session=4,
        show_reference=True,
        criteria=[{"id": "helpful", "text": "Which answer is more helpful?"}],
        attention_every=2,
    )
    app = create_app([folder])
    yield app
    for s in app.state.studies.values():
        s.ctx.store.close()


def _assignment(app, page: str):
    served = next(iter(app.state.studies.values()))
    aid = int(re.search(r"/a/(\d+)/submit", page).group(1))
    return served, work.get_assignment(served.ctx.store, aid)


def _letter_of(assignment, conversation: str) -> str:
    return "AB"[assignment.shown_order.index(conversation)]


def test_one_session(prompts_app):
    ann = Annotator(prompts_app, "ps")
    page = ann.enter()
    assert page.status_code == 200 and "Practice" in page.text
    served, a = _assignment(prompts_app, page.text)
    assert a.unit_kind == "prompts-check"
    # the practice shows the prompt of its right answer (the other answer is to another prompt)
    assert f"Question number {a.payload['prompt_id'][1:]}?" in unescape(page.text)
    r = ann.post(ann.action(page.text), {"choice": _letter_of(a, a.payload["correct"]), "request_id": uuid.uuid4().hex})
    assert r.json()["ok"] is True

    seen_items = []
    for n in range(4):
        page = ann.task()
        served, a = _assignment(prompts_app, page.text)
        if a.unit_kind == "prompts-check":  # the attention check after two items: answered wrong
            wrong = "AB"[1 - "AB".index(_letter_of(a, a.payload["correct"]))]
            assert ann.post(ann.action(page.text), {"choice": wrong, "request_id": uuid.uuid4().hex}).json()["ok"]
            page = ann.task()
            served, a = _assignment(prompts_app, page.text)
        assert a.unit_kind == "prompts" and f"Item {n + 1} of 4" in page.text
        text = unescape(page.text)
        pid = a.payload["prompt_id"]
        assert f"Question number {pid[1:]}?" in text and f"ref {pid[1:]}" in text  # the prompt, its reference
        bots = [a.payload["speakers_to_eval"][a.conversation_ids.index(c)] for c in a.shown_order]
        # Answer A is the first shown conversation, B the second
        a_pos, b_pos = text.index(f"{bots[0]} answers {pid}"), text.index(f"{bots[1]} answers {pid}")
        assert a_pos < b_pos and "Which answer is more helpful?" in text
        url = ann.action(page.text)
        refused = ann.post(url, {"choice": "C", "request_id": uuid.uuid4().hex})
        assert refused.status_code == 400 and "A, B, tie or both bad" in refused.json()["error"]
        ok = ann.post(
            url, {"choice": "A", "criterion-helpful": "tie", "justification": "clearer", "request_id": uuid.uuid4().hex}
        )
        assert ok.json()["ok"] is True, ok.json()
        seen_items.append((a.unit_id, bots))
    assert ann.task().url.path.endswith("/done")
    assert len({u for u, _ in seen_items}) == 4  # never the same item twice

    ds = served.ctx.store.load_dataset(served.ctx.study_id)
    overall = [j for j in ds.judgments if j.question == "overall"]
    helpful = [j for j in ds.judgments if j.question == "helpful"]
    assert len(overall) == 4 and len(helpful) == 4
    for j, (_, bots) in zip(overall, seen_items):
        assert j.value["winner"] == "model_a" and j.value["model_a"] == bots[0] and j.value["model_b"] == bots[1]
        assert j.shown_order == [j.value["conversation_a"], j.value["conversation_b"]]
        assert "base" in bots and j.justification == "clearer"
    assert all(j.value["winner"] == "tie" for j in helpful)
    checks = [j for j in ds.judgments if j.meta.get("check")]
    assert [j.meta["passed"] for j in checks] == [True, False]
    annotator = next(x for x in ds.annotators if x.platform != "judge")
    assert annotator.meta.get("status") == "flagged"


def test_each_answer_commits_with_the_next_assignment(prompts_app):
    """Every answer (a missed practice, the passed one, the items, an attention check) commits
    with the annotator's next assignment, and the task page that follows writes nothing: one write
    transaction per judgment (two before: the page chose the next unit in a locked transaction of
    its own). The answer after the last item finds no next unit; the done page records the end."""
    from .test_live_support import WriteTransactions

    ann = Annotator(prompts_app, "ps")
    page = ann.enter()
    served, a = _assignment(prompts_app, page.text)
    writes = WriteTransactions(served.ctx.store.engine)
    answers = 0
    for passing in (False, True):  # the practice: a miss (try 2 of 2 follows), then a pass
        right = _letter_of(a, a.payload["correct"])
        choice = right if passing else "AB"[1 - "AB".index(right)]
        r = ann.post(ann.action(page.text), {"choice": choice, "request_id": uuid.uuid4().hex})
        assert r.json()["ok"] is True
        answers += 1
        assert writes.count == answers
        page = ann.task()
        assert writes.count == answers  # the page read the assignment the answer stored
        served, a = _assignment(prompts_app, page.text)
    kinds, sent_to = [], []
    while not page.url.path.endswith("/done"):
        served, a = _assignment(prompts_app, page.text)
        kinds.append(a.unit_kind)
        choice = _letter_of(a, a.payload["correct"]) if a.unit_kind == "prompts-check" else "A"
        r = ann.post(ann.action(page.text), {"choice": choice, "request_id": uuid.uuid4().hex})
        assert r.json()["ok"] is True
        answers += 1
        assert writes.count == answers
        sent_to.append(r.json()["redirect"])
        page = ann.client.get(r.json()["redirect"])  # where the page goes next, as app.js follows it
    assert kinds == ["prompts", "prompts", "prompts-check", "prompts", "prompts"]
    # the answer after the last item found nothing left: its reply sends the page to the done page
    assert sent_to == ["/s/ps/task"] * 4 + ["/s/ps/done"] and "You have finished." in page.text
    assert writes.count == answers + 1  # the done page's completion record
    mine = work.annotator_assignments(served.ctx.store, served.ctx.study_id, a.annotator_id)
    assert [x.status for x in mine] == ["submitted"] * answers
    assert len({x.unit_id for x in mine if x.unit_kind == "prompts"}) == 4  # never the same item twice
    assert work.list_annotators(served.ctx.store, served.ctx.study_id)[0]["status"] == "active"


def test_an_answer_is_kept_when_choosing_the_next_item_fails(prompts_app, monkeypatch):
    """When choosing the next item fails in the answer's transaction, the answer is stored alone
    (scheduling.answer_with_next) and the task page chooses the item as before."""
    ann = Annotator(prompts_app, "ps")
    page = ann.enter()
    served, a = _assignment(prompts_app, page.text)
    assert ann.post(
        ann.action(page.text), {"choice": _letter_of(a, a.payload["correct"]), "request_id": uuid.uuid4().hex}
    ).json()["ok"]
    page = ann.task()
    from .test_live_support import break_first_choice

    protocol = served.protocol
    calls = break_first_choice(monkeypatch, protocol)
    r = ann.post(ann.action(page.text), {"choice": "B", "request_id": uuid.uuid4().hex})
    assert r.status_code == 200 and r.json()["ok"], r.text
    stored = served.ctx.store.load_dataset(served.ctx.study_id).judgments
    assert [j.question for j in stored].count("overall") == 1
    page = ann.task()
    assert "Item 2 of 4" in page.text and len(calls) == 2
