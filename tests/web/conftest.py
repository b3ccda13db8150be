"""Fixtures of the web tests: a real app (create_app) on a real SQLite file, driven by TestClient."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dialeval.web.app import create_app

from .studies import make_acute_study, make_stb_study


class Annotator:
    """One browser-like client walking through a study (cookies kept per client)."""

    def __init__(self, app, slug: str, params: dict | None = None):
        self.client = TestClient(app, base_url="http://testserver")
        self.slug = slug
        self.params = params or {}
        self.csrf = ""

    def url(self, path: str = "") -> str:
        return f"/s/{self.slug}/{path}"

    def enter(self):
        r = self.client.get(self.url(), params=self.params)
        if r.url.path.endswith("/consent"):
            pass
        else:
            r = self.client.post(self.url("start"), data={"volunteer": "1"} if self.params.get("volunteer") else {})
        self.csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
        r = self.client.post(self.url("consent"), data={"csrf": self.csrf, "agree": "yes"})
        r = self.client.post(self.url("instructions"), data={"csrf": self.csrf})
        return r

    def task(self):
        return self.client.get(self.url("task"))

    @staticmethod
    def action(page_html: str) -> str:
        return re.search(r'<form method="post" action="([^"]+)" data-ajax', page_html).group(1)

    def post(self, action_url: str, data: dict, json_api: bool = True, headers: dict | None = None):
        all_headers = {"Accept": "application/json"} if json_api else {}
        all_headers.update(headers or {})
        body = {"csrf": self.csrf, **data}
        return self.client.post(action_url, data=body, headers=all_headers)


@pytest.fixture
def acute_app(tmp_path: Path):
    folder = make_acute_study(tmp_path / "acute")
    app = create_app([folder])
    yield app
    for s in app.state.studies.values():
        s.ctx.store.close()


@pytest.fixture
def stb_app(tmp_path: Path):
    folder = make_stb_study(tmp_path / "stb")
    app = create_app([folder])
    yield app
    for s in app.state.studies.values():
        s.ctx.store.close()
