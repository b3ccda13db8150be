"""The simulated annotator's browser (simulate/browser.py): a crowd through the real app over HTTPS
(Secure, partitioned cookies), and a kept-alive connection the server closed while it was idle."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

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


class RecordingProxy:
    """A forward proxy on 127.0.0.1 (plain-http requests by absolute URL, https by CONNECT
    tunnel) that records each request line it is sent."""

    def __init__(self):
        import socketserver

        self.lines: list[str] = []
        proxy = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                line = self.rfile.readline().decode("latin-1").rstrip("\r\n")
                proxy.lines.append(line)
                head = b""
                while (header := self.rfile.readline()) not in (b"\r\n", b"\n", b""):
                    head += header
                method, target, _version = line.split(" ")
                if method == "CONNECT":
                    host, port = target.rsplit(":", 1)
                    upstream = socket.create_connection((host, int(port)))
                    self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                else:  # absolute URL: the same request, to the origin, on a fresh connection
                    parts = urlsplit(target)
                    upstream = socket.create_connection((parts.hostname, parts.port))
                    path = parts.path + ("?" + parts.query if parts.query else "")
                    upstream.sendall(f"{method} {path} HTTP/1.1\r\n".encode() + head + b"\r\n")
                self._relay(upstream)

            def _relay(self, upstream):
                import selectors

                own = self.connection
                with selectors.DefaultSelector() as sel:
                    sel.register(own, selectors.EVENT_READ, upstream)
                    sel.register(upstream, selectors.EVENT_READ, own)
                    while True:
                        for key, _ in sel.select(timeout=5):
                            data = key.fileobj.recv(65536)
                            if not data:
                                upstream.close()
                                return
                            key.data.sendall(data)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_the_environments_proxy_is_used_for_http_and_https(monkeypatch, tls_cert):  # noqa: F811
    # HTTP_PROXY / HTTPS_PROXY as httpx honoured them: http by absolute URL, https by CONNECT
    for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    trusted = ssl.create_default_context(cafile=str(tls_cert[0]))
    with (
        RecordingProxy() as proxy,
        ThreadServer(cookie_app()) as plain,
        ThreadServer(cookie_app(), cert=tls_cert) as tls,
    ):
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{proxy.port}")
        browser = Browser(f"http://127.0.0.1:{plain.port}")
        assert browser.get("/s/x/set").status_code == 303 and browser.get("/s/x/show").text == "gone=1;who=me"
        secure = Browser(f"https://127.0.0.1:{tls.port}", tls=trusted)
        assert secure.get("/s/x/set").status_code == 303 and secure.get("/s/x/show").text == "gone=1;who=me"
        browser.close()
        secure.close()
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        direct = Browser(f"http://127.0.0.1:{plain.port}")
        assert direct.get("/s/x/show").text == ""
        direct.close()
    # one kept-alive connection each, through the proxy (this test proxy relays a connection as it
    # is after its first request): the first http request by absolute URL, one CONNECT for https
    assert proxy.lines == [
        f"GET http://127.0.0.1:{plain.port}/s/x/set HTTP/1.1",
        f"CONNECT 127.0.0.1:{tls.port} HTTP/1.0",
    ]


def test_a_simulated_annotator_reads_the_page_it_lands_on(tmp_path):
    # as app.js: the start, consent and instructions forms' replies bring the consent page, the
    # instructions and the first task page, which are read, not fetched; so is each task page an
    # answer's reply brings
    folder = make_stb_study(tmp_path / "stb", per_pair=2, humans=2, packages_per_annotator=2)
    app = create_app([folder], prepare=True)
    gets: list[str] = []

    async def counting(scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET":
            gets.append(scope["path"].rsplit("/", 1)[-1])
        await app(scope, receive, send)

    with ThreadServer(counting) as server:
        result = simulate_study(
            folder, annotators=1, seed=5, careless_share=0.0, abandon_p=0.0, refresh_p=0.0,
            base_url=f"http://127.0.0.1:{server.port}",
        )  # fmt: skip
    assert result.errors == [] and result.judgments_stored == result.judgments_submitted > 0
    # no task page and no instructions fetched: the instructions' reply brought the first task page,
    # every answer's reply the next one (Spot The Bot's page asks for it, as app.js does) or, after the
    # last, sent the page to the done page; the consent page came with the start form's reply (a
    # Prolific arrival, a GET, is sent there by a redirect)
    assert "task" not in gets and "instructions" not in gets, gets
    assert gets.count("consent") <= 1 and gets.count("done") == 1, gets
