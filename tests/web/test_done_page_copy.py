"""The done page's completion code (issue 21, item 6): a copy button that works under the strict CSP
(no inline script: app.js wires it), a line saying to paste the code into Prolific, and the
redirect back to Prolific when the study has its completion code. Over HTTP, as a browser asks."""

from __future__ import annotations

import re

import yaml

from .studies import make_acute_study
from .test_integrity import Visitor, acute_answer
from .test_live_support import LiveServer

PROLIFIC = {"PROLIFIC_PID": "5f0c0ffee0c0ffee0c0ffee1", "STUDY_ID": "s1", "SESSION_ID": "x1"}


def finish(v: Visitor, params: dict | None = None):
    page = v.enter(params)
    assert page.url.path.endswith("/task"), page.text[:300]
    acute_answer(page, v)
    return v.get(v.url("done"))


def test_copy_button_and_what_to_do_with_the_code(tmp_path):
    folder = make_acute_study(tmp_path / "a", onboarding=False, comparisons=1)
    with LiveServer([folder]) as server:
        done = finish(Visitor(server), PROLIFIC)
        assert done.url.path.endswith("/done")
        code = re.search(r'id="completion-code">([^<]+)<', done.text).group(1)
        button = re.search(r"<button[^>]*id=\"copy-code\"[^>]*>", done.text).group(0)
        assert 'data-copy-target="completion-code"' in button and "hidden" in button  # app.js shows it
        assert "Paste this code into Prolific" in done.text
        # no inline script: the strict CSP would block it; the page loads app.js, which wires the button
        assert "script-src 'self'" in done.headers["content-security-policy"]
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", done.text)
        assert '<script src="/static/app.js"></script>' in done.text
        script = Visitor(server).get("/static/app.js").text
        assert "data-copy-target" in script and "clipboard.writeText" in script
        assert code.strip()
        # a plain study link: the same button, a hint for wherever the code goes
        done = finish(Visitor(server))
        assert 'id="copy-code"' in done.text and "on Prolific: the study's completion code box" in done.text


def test_prolific_code_of_the_study_redirects_back(tmp_path):
    folder = make_acute_study(tmp_path / "b", onboarding=False, comparisons=1)
    path = folder / "study.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["recruitment"] = {"platform": "prolific", "completion_code": "C1A2B3C4"}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with LiveServer([folder]) as server:
        v = Visitor(server)
        page = v.enter(PROLIFIC)
        acute_answer(page, v)
        r = v.http.get(v.url("done"), headers={"Accept": "text/html"})
        assert r.status_code == 303
        assert r.headers["location"] == "https://app.prolific.com/submissions/complete?cc=C1A2B3C4"
