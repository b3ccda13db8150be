"""Errors raised by the router itself (unknown page, wrong method) reach a browser as an HTML page
and a script (fetch with Accept: application/json) as JSON. Real app on uvicorn, loopback."""

from __future__ import annotations

import html

import httpx

from .test_live_support import LiveServer, make_live_study

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
FETCH = {"Accept": "application/json"}


def test_router_errors_are_html_for_browsers_and_json_for_scripts(tmp_path):
    folder = make_live_study(tmp_path / "sm", "single-model", ["repeat"])
    with LiveServer([folder]) as server, httpx.Client(base_url=server.url) as http:
        slug = server.slug
        for method, path, status in (
            ("GET", "/no/such/page", 404),
            ("GET", f"/s/{slug}/start", 405),  # the entry form posts here
            ("GET", f"/s/{slug}/a/1/send", 405),  # actions are posted by the page's script
        ):
            data = http.request(method, path, headers=FETCH)
            assert data.status_code == status and data.headers["content-type"] == "application/json"
            body = data.json()
            assert body["ok"] is False and body["error"]  # a message, not FastAPI's {"detail": ...}
            page = http.request(method, path, headers=BROWSER)
            assert page.status_code == status
            assert page.headers["content-type"].startswith("text/html")
            assert page.text.lstrip().lower().startswith("<!doctype html") and '"detail"' not in page.text
            assert html.escape(body["error"], quote=False) in page.text  # the same message, as a page
            assert page.headers["Content-Security-Policy"]  # the app's own headers, like any page
            if status == 405:
                assert page.headers["Allow"] == data.headers["Allow"] == "POST"
