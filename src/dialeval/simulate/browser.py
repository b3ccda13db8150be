"""The simulated annotator's browser: one site, one kept-alive HTTP/1.1 connection, its cookies.

Built on the standard library: http.client for the connection (plain or TLS, kept alive between
requests, reopened when the server has closed it) and http.cookiejar for the cookies (the rules a
browser follows: path, Secure, Max-Age and Expires). Redirects are not followed here: the annotator
follows them itself, as it must see a redirect to another site (a Prolific completion URL).

A load run drives hundreds of these in one process on the cores of the server it measures; httpx
(which `dialeval simulate` used before) spent about five times the CPU per request (its URL,
header and cookie models around h11), CPU that a real crowd would spend on its own machines.
"""

from __future__ import annotations

import http.client
import json
import select
import ssl
from http.cookiejar import CookieJar
from typing import Any
from urllib.parse import SplitResult, urlencode, urljoin, urlsplit
from urllib.request import Request, getproxies, proxy_bypass

from .. import __version__

USER_AGENT = f"dialeval-simulate/{__version__}"


class BrowserError(Exception):
    """The request got no HTTP answer (connection refused or reset, a timeout, a malformed answer)."""


class Response:
    """One HTTP answer: status, headers, the URL it answers and its body."""

    __slots__ = ("status_code", "headers", "url", "content", "_text")

    def __init__(self, status_code: int, headers: http.client.HTTPMessage, url: str, content: bytes):
        self.status_code = status_code
        self.headers = headers  # case-insensitive .get(name)
        self.url = url
        self.content = content
        self._text: str | None = None

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    @property
    def text(self) -> str:
        """The body decoded (once: a page is read for its form, its token and its texts)."""
        if self._text is None:
            charset = self.headers.get_content_charset() or "utf-8"
            try:
                self._text = self.content.decode(charset, errors="replace")
            except LookupError:  # an unknown charset name
                self._text = self.content.decode("utf-8", errors="replace")
        return self._text

    def json(self) -> Any:
        """The body as JSON (ValueError when it is not)."""
        return json.loads(self.content)


def _form_value(value: Any) -> str:
    # as httpx and a browser's form encode them
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)


def form_body(data: dict[str, Any]) -> bytes:
    """application/x-www-form-urlencoded; a list or tuple value is the field repeated."""
    pairs = [(k, _form_value(item)) for k, v in data.items() for item in (v if isinstance(v, (list, tuple)) else (v,))]
    return urlencode(pairs).encode("ascii")


class Browser:
    """A browser-like client of one site (scheme, host and port of `base_url`)."""

    def __init__(self, base_url: str, *, timeout: float = 60.0, tls: ssl.SSLContext | None = None):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url}")
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.host = parts.netloc
        self.cookies = CookieJar()
        self.requests = 0  # sent by this browser (the load benchmark's requests per judgment)
        self._cookie_header: dict[str, str | None] = {}  # request path -> Cookie header, until a cookie changes
        # HTTP(S)_PROXY and NO_PROXY, as httpx and urllib read them: https through the proxy's
        # CONNECT tunnel, http as absolute request targets sent to the proxy
        proxy = _proxy_for(parts.scheme, parts.hostname)
        self._absolute_targets = proxy is not None and parts.scheme == "http"
        host, port = (str(proxy.hostname), proxy.port or 80) if proxy is not None else (parts.hostname, parts.port)
        if parts.scheme == "https":
            self.conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, port, timeout=timeout, context=tls or ssl.create_default_context()
            )
            if proxy is not None:
                self.conn.set_tunnel(parts.hostname, parts.port or 443)
        else:
            self.conn = http.client.HTTPConnection(host, port, timeout=timeout)

    def cookie(self, name: str) -> str | None:
        """The value of a cookie this site set (the first of that name)."""
        return next((c.value for c in self.cookies if c.name == name), None)

    def get(self, url: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Response:
        if params:
            url += ("&" if "?" in url else "?") + urlencode({k: _form_value(v) for k, v in params.items()})
        return self.request("GET", url, headers=headers)

    def post(self, url: str, data: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Response:
        hdrs = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
        return self.request("POST", url, body=form_body(data or {}), headers=hdrs)

    def request(
        self, method: str, url: str, *, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> Response:
        """`url`: a path on this site or an absolute URL of it."""
        full = urljoin(self.base + "/", url)
        parts = urlsplit(full)
        if parts.netloc != self.host:
            raise ValueError(f"{full} is not on {self.base}")
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        if self._absolute_targets:  # a plain-http proxy takes the whole URL
            target = f"{parts.scheme}://{parts.netloc}{target}"
        hdrs = {"User-Agent": USER_AGENT, "Accept": "*/*", **(headers or {})}
        cookie = self._cookies_for(full, parts.path or "/")
        if cookie:
            hdrs["Cookie"] = cookie
        conn = self.conn
        self.requests += 1
        if conn.sock is not None and _closed_by_peer(conn.sock):
            conn.close()  # the server ended the kept-alive connection while it was idle: a new one
        try:
            conn.request(method, target, body=body, headers=hdrs)
            resp = conn.getresponse()
            content = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise BrowserError(f"{method} {full}: {type(exc).__name__}: {exc}") from exc
        if resp.will_close:
            conn.close()
        if "set-cookie" in resp.msg:
            self.cookies.extract_cookies(resp, Request(full, method=method))
            self._cookie_header.clear()
        return Response(resp.status, resp.msg, full, content)

    def _cookies_for(self, full: str, path: str) -> str | None:
        if path in self._cookie_header:
            return self._cookie_header[path]
        request = Request(full)
        self.cookies.add_cookie_header(request)
        value = request.get_header("Cookie")
        # kept per path while no cookie is set; a cookie that expires meanwhile (these sessions last
        # minutes, the app's cookies months) would be sent until then
        if len(self._cookie_header) > 256:
            self._cookie_header.clear()
        self._cookie_header[path] = value
        return value

    def close(self) -> None:
        self.conn.close()


def _proxy_for(scheme: str, hostname: str) -> SplitResult | None:
    """The proxy the environment names for this scheme and host (None: connect directly)."""
    proxy = getproxies().get(scheme)
    if not proxy or proxy_bypass(hostname):
        return None
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return parts if parts.hostname else None


def _closed_by_peer(sock: Any) -> bool:
    """An idle kept-alive socket that is readable has been closed by the server (or holds bytes no
    request asked for): either way it cannot carry the next request."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)
