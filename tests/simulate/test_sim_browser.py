"""The simulated annotator's browser (simulate/browser.py): a crowd through the real app over HTTPS
(Secure, partitioned cookies), and a kept-alive connection the server closed while it was idle."""

from __future__ import annotations

import ssl
import time

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse
from starlette.routing import Route

from dialeval.simulate import annotator, simulate_study
from dialeval.simulate.browser import Browser, form_body
from dialeval.web.app import create_app
from tests.e2e.test_e2e_integrity import ThreadServer, tls_cert  # noqa: F401 - the fixture
from tests.web.studies import make_stb_study


def test_a_crowd_works_over_https(tmp_path, tls_cert, monkeypatch):  # noqa: F811
    folder = make_stb_study(tmp_path / "stb", per_pair=2, humans=2, packages_per_annotator=1)
    trusted = ssl.create_default_context(cafile=str(tls_cert[0]))
    monkeypatch.setattr(annotator, "_tls_context", lambda: trusted)
    with ThreadServer(create_app([folder], prepare=True), cert=tls_cert) as server:
        result = simulate_study(
            folder, annotators=4, seed=3, careless_share=0.0, base_url=f"https://127.0.0.1:{server.port}"
        )
    assert result.errors == []
    assert result.judgments_mismatch == []
    assert result.judgments_stored == result.judgments_submitted > 0


def cookie_app() -> Starlette:
    async def set_cookie(request: Request):
        response = RedirectResponse("/s/x/show", status_code=303)
        response.set_cookie("who", "me", path="/s/x", httponly=True, samesite="lax")
        response.set_cookie("gone", "1", path="/s/x")
        return response

    async def drop_cookie(request: Request):
        response = PlainTextResponse("dropped")
        response.delete_cookie("gone", path="/s/x")
        return response

    async def show(request: Request):
        return PlainTextResponse(";".join(f"{k}={v}" for k, v in sorted(request.cookies.items())))

    async def echo(request: Request):
        form = await request.form()
        return PlainTextResponse("&".join(f"{k}={v}" for k, v in form.multi_items()))

    return Starlette(
        routes=[
            Route("/s/x/set", set_cookie),
            Route("/s/x/drop", drop_cookie),
            Route("/s/x/show", show),
            Route("/elsewhere", show),
            Route("/s/x/echo", echo, methods=["POST"]),
        ]
    )


def test_cookies_paths_forms_and_a_connection_closed_while_idle():
    server = ThreadServer(cookie_app())
    server.server.config.timeout_keep_alive = 1
    with server:
        browser = Browser(f"http://127.0.0.1:{server.port}")
        first = browser.get("/s/x/set")
        assert first.status_code == 303 and first.headers["location"] == "/s/x/show"
        assert browser.get(first.headers["location"]).text == "gone=1;who=me"
        assert browser.get("/elsewhere").text == ""  # outside the cookies' path
        browser.get("/s/x/drop")
        assert browser.get("/s/x/show").text == "who=me"
        assert browser.cookie("who") == "me"
        time.sleep(1.5)  # the server closes the idle kept-alive connection
        posted = browser.post("/s/x/echo", {"a": "1 2", "b": ["x", "y"], "c": True, "d": None})
        assert posted.text == "a=1 2&b=x&b=y&c=true&d="
        browser.close()


def test_form_body_encodes_like_a_browser():
    assert form_body({"t": "é&=", "n": 3}) == b"t=%C3%A9%26%3D&n=3"
    with pytest.raises(ValueError):
        Browser("ftp://example.org")
