"""Spot The Bot packages through the real app: package rules, progress, resume, refused input."""

from __future__ import annotations

import re
import uuid

from dialeval.store import work

from .conftest import Annotator

ANSWER = {"entity0": "bot", "entity1": "human", "fluency": "0", "sensibleness": "tie", "specificity": "1"}


def study_of(app):
    return next(iter(app.state.studies.values()))


def answer_package(ann: Annotator) -> int:
    n = 0
    while True:
        page = ann.task()
        if page.url.path.endswith("/done") or "data-ajax" not in page.text:
            return n
        pos = re.search(r'name="position" value="(\d+)"', page.text).group(1)
        r = ann.post(ann.action(page.text), {**ANSWER, "position": pos, "request_id": uuid.uuid4().hex})
        assert r.status_code == 200, r.text
        n += 1
        if r.json()["done"]:
            return n


def test_packages_respect_the_rules(stb_app):
    served = study_of(stb_app)
    units = work.list_units(served.ctx.store, served.ctx.study_id, "stb-package")
    assert units
    for u in units:
        convs = [s["conversation"] for s in u.payload["segments"]]
        assert len(convs) == len(set(convs))  # never two segments of one conversation in one package
        assert sum(not s["human"] for s in u.payload["segments"]) <= 4
        assert sum(s["human"] for s in u.payload["segments"]) <= 1
    ann = Annotator(stb_app, "stb-test")
    ann.enter()
    total = 0
    for _ in range(3):
        total += answer_package(ann)
    mine = work.annotator_assignments(served.ctx.store, served.ctx.study_id, 1)
    assert len(mine) <= 2  # packages_per_annotator
    bot_convs = [s["conversation"] for a in mine for s in a.payload["segments"] if not s["human"]]
    assert len(bot_convs) == len(set(bot_convs))  # each conversation's segments go to different annotators
    ds = served.ctx.store.load_dataset(served.ctx.study_id)
    assert len(ds.judgments) == total
    j = ds.judgments[0]
    assert j.question == "spot-the-bot"
    assert j.value == {
        "segment_exchanges": j.value["segment_exchanges"],
        "entity0": "bot",
        "entity1": "human",
        "decision_turn0": None,
        "decision_turn1": None,
        "fluency": 0,
        "sensibleness": "tie",
        "specificity": 1,
    }


def test_refused_and_resume(stb_app):
    ann = Annotator(stb_app, "stb-test")
    page = ann.enter()
    assert "Segment 1 of" in page.text
    pos = re.search(r'name="position" value="(\d+)"', page.text).group(1)
    url = ann.action(page.text)
    r = ann.post(url, {**ANSWER, "entity1": "", "position": pos, "request_id": uuid.uuid4().hex})
    assert r.status_code == 400 and "Speaker B" in r.json()["error"]
    r = ann.post(url, {**ANSWER, "fluency": "2", "position": pos, "request_id": uuid.uuid4().hex})
    assert r.status_code == 400
    r = ann.post(url, {**ANSWER, "position": "999", "request_id": uuid.uuid4().hex})
    assert r.status_code == 400
    served = study_of(stb_app)
    assert served.ctx.store.counts(served.ctx.study_id)["judgments"] == 0
    req = uuid.uuid4().hex
    assert ann.post(url, {**ANSWER, "position": pos, "request_id": req}).json()["ok"]
    assert ann.post(url, {**ANSWER, "position": pos, "request_id": req}).json()["ok"]  # double submit
    assert served.ctx.store.counts(served.ctx.study_id)["judgments"] == 1
    again = ann.task()  # a refresh shows the next segment
    assert "Segment 2 of" in again.text


def test_annotations_per_segment_cap(stb_app):
    served = study_of(stb_app)
    n_units = len(work.list_units(served.ctx.store, served.ctx.study_id, "stb-package"))
    given = 0
    for _ in range(n_units * 2 + 3):
        ann = Annotator(stb_app, "stb-test")
        page = ann.enter()
        if "data-ajax" in page.text:
            given += 1
    assert given <= n_units * 2  # annotations_per_segment = 2
