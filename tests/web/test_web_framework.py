"""The framework: start page, health, admin, expiry, rate limiter, registry, secrets."""

from __future__ import annotations

import re
import tomllib
import uuid
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from dialeval import clock, registry
from dialeval.errors import DialevalError
from dialeval.protocols import get_protocol
from dialeval.store import work
from dialeval.web.app import create_app
from dialeval.web.ratelimit import RateLimiter
from tests.conftest import REPO

from .conftest import Annotator
from .studies import make_acute_study, make_stb_study


def test_start_page_and_health(tmp_path):
    app = create_app([make_acute_study(tmp_path / "a"), make_stb_study(tmp_path / "b")])
    c = TestClient(app)
    assert c.get("/healthz").status_code == 200
    page = c.get("/").text
    for method in ("acute", "spot-the-bot"):
        assert f'data-method="{method}"' in page
    assert 'href="/s/acute-test/"' in page and 'href="/s/stb-test/"' in page
    assert c.get("/s/nope/").status_code == 404


def test_registry():
    """The registry holds exactly the methods pyproject.toml registers, each with its pages; the
    protocol of each says its own id and names a template (no list of ids here: pyproject.toml is it)."""
    with open(REPO / "pyproject.toml", "rb") as f:
        registered = tomllib.load(f)["project"]["entry-points"]["dialeval.methods"]
    assert set(registry.ids()) >= set(registered) and len(registered) >= 6
    for method_id in registered:
        method = registry.get(method_id)
        assert method.collectable, method_id  # dialeval's own methods all have pages
        protocol = get_protocol(method_id)
        assert protocol.method == method_id and protocol.template.endswith(".html")
    assert set(registry.ids(collectable=True)) >= set(registered)
    with pytest.raises(DialevalError):
        get_protocol("nope")


def test_secret_files_created_once(tmp_path, monkeypatch):
    monkeypatch.delenv("DIALEVAL_SECRET", raising=False)
    monkeypatch.delenv("DIALEVAL_ADMIN_TOKEN", raising=False)
    folder = make_acute_study(tmp_path / "a")
    app1 = create_app([folder])
    secret = (folder / ".secret").read_text().strip()
    app2 = create_app([folder], prepare=False)
    assert (folder / ".secret").read_text().strip() == secret
    assert next(iter(app1.state.studies.values())).admin_token == next(iter(app2.state.studies.values())).admin_token
    # a cookie made by one process is valid in the other (stateless workers)
    ann = Annotator(app1, "acute-test")
    ann.enter()
    c2 = TestClient(app2)
    c2.cookies = ann.client.cookies
    assert c2.get("/s/acute-test/task").status_code == 200


def test_admin(acute_app):
    served = next(iter(acute_app.state.studies.values()))
    c = TestClient(acute_app)
    assert c.get("/s/acute-test/admin").status_code == 403
    assert c.get("/s/acute-test/admin", params={"token": "wrong"}).status_code == 403
    ann = Annotator(acute_app, "acute-test")
    page = ann.enter()
    ann.post(
        ann.action(page.text), {"choice": "1", "justification": "<b>bold</b> words", "request_id": uuid.uuid4().hex}
    )
    r = c.get("/s/acute-test/admin", params={"token": served.admin_token})
    assert r.status_code == 200 and "Annotators" in r.text and "Onboarding:" in r.text
    assert r.headers["content-security-policy"].endswith("frame-ancestors 'none'; base-uri 'none'")
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
    ann_id = work.list_annotators(served.ctx.store, served.ctx.study_id)[0]["id"]
    assert c.post(f"/s/acute-test/admin/annotators/{ann_id}/block", data={}).status_code == 403
    c.post(f"/s/acute-test/admin/annotators/{ann_id}/block", data={"csrf": csrf})
    assert work.get_annotator(served.ctx.store, ann_id).status == "blocked"
    c.post(f"/s/acute-test/admin/annotators/{ann_id}/unblock", data={"csrf": csrf})
    assert work.get_annotator(served.ctx.store, ann_id).status == "active"
    assert "selfchat-eliza-0000" in c.get("/s/acute-test/admin/conversations").text
    conv = c.get("/s/acute-test/admin/conversations/selfchat-eliza-0000")
    assert conv.status_code == 200 and "eliza answers 0" in conv.text
    export = c.get("/s/acute-test/admin/export.csv")
    assert export.status_code == 200 and export.headers["content-type"].startswith("text/csv")
    assert "&lt;b&gt;bold" not in export.text and "<b>bold</b> words" in export.text


def test_expired_assignment_returns_to_pool(tmp_path):
    folder = make_acute_study(tmp_path / "a", onboarding=False, per_bot=1, per_pair=1)
    # 3 bots x 1 conversation: 3 pairs, 1 annotation each
    app = create_app([folder])
    served = next(iter(app.state.studies.values()))
    anns = [Annotator(app, "acute-test") for _ in range(4)]
    pages = [a.enter() for a in anns]
    assert sum("data-ajax" in p.text for p in pages) == 3  # the 4th finds nothing left
    first = re.search(r"/a/(\d+)/", pages[0].text).group(1)
    with served.ctx.store.session() as s:
        from dialeval.store.schema import AssignmentRow

        s.get(AssignmentRow, int(first)).expires_at = clock.now() - timedelta(minutes=1)
    page = anns[3].task()
    assert "data-ajax" in page.text  # the expired unit went back to the pool
    r = anns[0].post(
        anns[0].action(pages[0].text), {"choice": "1", "justification": "too late now", "request_id": uuid.uuid4().hex}
    )
    assert r.status_code == 409


def test_rate_limiter():
    lim = RateLimiter(rate=1.0, burst=2)
    assert lim.allow("a", now=0.0) and lim.allow("a", now=0.0)
    assert not lim.allow("a", now=0.1)
    assert lim.allow("b", now=0.1)
    assert lim.allow("a", now=1.2)


def test_serve_links(tmp_path):
    from dialeval.web.serve import study_links

    app = create_app([make_acute_study(tmp_path / "a")])
    (link,) = study_links(app, "0.0.0.0", 8123)
    assert link["annotator"] == "http://127.0.0.1:8123/s/acute-test/"
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in link["prolific"]
    assert link["admin"].endswith("/s/acute-test/admin?token=" + next(iter(app.state.studies.values())).admin_token)


def test_app_from_env(tmp_path, monkeypatch):
    from dialeval.web.app import app_from_env

    folder = make_acute_study(tmp_path / "a")
    create_app([folder])
    monkeypatch.setenv("DIALEVAL_STUDY_FOLDERS", str(folder))
    app = app_from_env()
    # a serving worker compiles its pages before the first request (Jinja compiles on first use):
    # the shared pages and the served method's, not another method's
    compiled = {name for _loader, name in app.state.env.cache}
    assert {"consent.html", "instructions.html", "acute.html"} <= compiled
    assert "spot_the_bot.html" not in compiled
    c = TestClient(app)
    assert c.get("/healthz").json()["studies"] == 1


def test_unticked_consent_answers_with_the_form_and_its_message(acute_app):
    """A browser without JavaScript or form validation posts the consent unticked: it gets the consent
    form again (400) with the message beside the box, not an error page, and can tick it and go on."""
    ann = Annotator(acute_app, "acute-test")
    r = ann.client.post(ann.url("start"), data={})
    ann.csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
    r = ann.client.post(ann.url("consent"), data={"csrf": ann.csrf})
    assert r.status_code == 400
    assert 'id="agree-error"' in r.text and "tick the box" in r.text and "back button" not in r.text
    assert re.search(r'<input type="checkbox" name="agree"[^>]*aria-invalid="true"', r.text)
    r = ann.client.post(ann.url("consent"), data={"csrf": ann.csrf, "agree": "yes"})
    assert r.url.path.endswith("/instructions")
