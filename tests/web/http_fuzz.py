"""The HTTP fuzz harness: malformed requests of every class against every route of a served app.

Used by tests/web/test_http_fuzz.py (a bounded number of cases, in CI) and by
benchmarks/fuzz_http.py (a longer run). The routes are enumerated from the FastAPI app, so a new
route is fuzzed without anyone listing it. A request "fails" when it gets a 5xx, a response that
shows a traceback, or no answer in time; every other status (a 4xx with a message) is fine.
"""

from __future__ import annotations

import json
import random
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi.routing import APIRoute

from dialeval.store import work

METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD")
BIG_IDS = ("99999999999999999999999999", str(2**63), str(2**64 + 1), "-1", "0", "1e5", "abc", "١٢", "9" * 5000)
NUMBERS = (
    "9223372036854775807",
    "-9223372036854775808",
    "1e300",
    "-1",
    "1e400",
    "-1e400",
    "1" + "0" * 30,
    "-" + "9" * 40,
    "NaN",
    "Infinity",
    "-Infinity",
    "1e-400",
    "0.5",
)
TRAVERSAL = ("../../../../etc/passwd", "..%2f..%2f..%2fetc%2fpasswd", "%2e%2e/%2e%2e/etc/passwd", "....//....//x")
ACTIONS = ("nope", "A", "x" * 41, "submit%00", "..", "__init__", "act", "events", "rate", "start_chat")


CLOSED = 0  # Result.status of a request the server refused by closing the connection


@dataclass
class Case:
    kind: str  # the class of malformation (reported per class)
    method: str
    path: str
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes | None = None
    cookies: dict[str, str] | None = None


@dataclass
class Result:
    case: Case
    status: int | None  # None: no answer in time; CLOSED: the connection was closed
    problem: str | None  # why it failed, None when the answer was fine


def app_routes(app) -> list[tuple[str, frozenset[str]]]:
    """(path template, methods) of every API route of the app, also inside included routers."""
    out: list[tuple[str, frozenset[str]]] = []

    def walk(routes) -> None:
        for r in routes:
            if hasattr(r, "original_router"):  # FastAPI >= 0.16x wraps included routers
                walk(r.original_router.routes)
            elif isinstance(r, APIRoute):
                out.append((r.path, frozenset(r.methods)))

    walk(app.routes)
    return out


@dataclass
class Visitor:
    """A signed-in annotator of one study (cookie, CSRF token, current task) to reach deep code."""

    slug: str
    cookies: dict[str, str]
    csrf: str
    assignment_id: int | None
    fields: list[str]  # the names of the task page's form fields
    admin_cookies: dict[str, str]
    admin_csrf: str
    conversation: str | None
    actions: list[str]


def sign_in(http: httpx.Client, app, slug: str) -> Visitor:
    """Walk in as a volunteer (start, consent, instructions, task) and open the admin page."""
    served = app.state.studies[slug]
    http.cookies.clear()
    r = http.post(f"/s/{slug}/start", data={"volunteer": "1"}, follow_redirects=True)
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
    http.post(f"/s/{slug}/consent", data={"csrf": csrf, "agree": "yes"})
    http.post(f"/s/{slug}/instructions", data={"csrf": csrf})
    page = http.get(f"/s/{slug}/task", follow_redirects=True).text
    found = re.search(r"/a/(\d+)/", page)
    fields = sorted(set(re.findall(r'name="([A-Za-z_][\w\-]*)"', page)) | {"request_id", "csrf"})
    cookies = dict(http.cookies)
    http.cookies.clear()
    r = http.get(f"/s/{slug}/admin", params={"token": served.admin_token}, follow_redirects=True)
    admin_csrf = re.search(r'name="csrf" value="([^"]+)"', r.text)
    admin_cookies = dict(http.cookies)
    http.cookies.clear()
    convs = [c["id"] for c in work.list_conversations(served.ctx.store, served.ctx.study_id)[:1]]
    actions = sorted(set(re.findall(r"/a/\d+/([a-z][a-z0-9_\-]*)", page)))
    return Visitor(
        slug=slug,
        cookies=cookies,
        csrf=csrf,
        assignment_id=int(found.group(1)) if found else None,
        fields=fields,
        admin_cookies=admin_cookies,
        admin_csrf=admin_csrf.group(1) if admin_csrf else "",
        conversation=convs[0] if convs else None,
        actions=actions,
    )


def fill(template: str, visitor: Visitor, rng: random.Random, hostile: bool) -> str:
    """A concrete path: real values (to get past the checks), or with `hostile` one hostile part."""
    real = {
        "slug": visitor.slug,
        "assignment_id": str(visitor.assignment_id or 1),
        "annotator_id": "1",
        "action": rng.choice(visitor.actions or ["submit"]),
        "what": rng.choice(("block", "unblock", "approve")),
        "conversation_id": visitor.conversation or "c1",
    }
    names = re.findall(r"{(\w+)(?::path)?}", template)
    bad = rng.choice(names) if hostile and names else None
    path = template
    for name in names:
        value = real.get(name, "x")
        if name == bad:
            value = rng.choice(
                {
                    "slug": ("nope", "..", "%ff", "a" * 300),
                    "assignment_id": BIG_IDS,
                    "annotator_id": BIG_IDS,
                    "action": ACTIONS,
                    "what": ("nope", "%00", "x" * 200),
                    "conversation_id": TRAVERSAL + ("%ff%fe", "x" * 5000),
                }.get(name, ("x",))
            )
        path = re.sub(r"{" + name + r"(?::path)?}", value, path)
    return path


def deep_json(depth: int) -> bytes:
    return ("[" * depth + "]" * depth).encode() if depth % 2 else ('{"a":' * depth + "1" + "}" * depth).encode()


def body_for(kind: str, visitor: Visitor, rng: random.Random) -> tuple[bytes | None, str]:
    """(body, content type) of one malformation class."""
    base = {f: rng.choice(("1", "yes", "a", "left", "0")) for f in visitor.fields}
    base["csrf"] = visitor.csrf
    base["request_id"] = f"fuzz{rng.getrandbits(40):012x}"
    if kind == "deep_json":
        return deep_json(rng.choice((33, 100, 900, 1000, 5000, 20000))), "application/json"
    if kind == "bad_json":
        return rng.choice((b"{", b"[1,", b'{"a":}', b"nul", b"\xff\xfe{}", b'"x"', b"[]", b"1", b"{}" * 100)), (
            "application/json"
        )
    if kind == "numbers":
        name = rng.choice(visitor.fields + ["position", "cursor", "index", "value", "choice", "rating"])
        raw = json.dumps({**base, name: "__N__"}).replace('"__N__"', rng.choice(NUMBERS))
        return raw.encode(), "application/json"
    if kind == "types":
        name = rng.choice(visitor.fields + ["request_id", "csrf"])
        value: Any = rng.choice(([], {}, None, True, 12, ["a", "b"], {"a": [1]}, "x" * 70000, "\u0000\ud800"))
        try:
            raw = json.dumps({**base, name: value}).encode()
        except (UnicodeEncodeError, ValueError):
            raw = b"{}"
        return raw, "application/json"
    if kind == "content_type":
        ctype = rng.choice(
            (
                "text/plain",
                "multipart/form-data",
                "multipart/form-data; boundary=",
                "application/x-www-form-urlencoded; charset=utf-16",
                "application/json; charset=latin-1",
                "application/xml",
                "",
                "\u00e9",
            )
        )
        return rng.choice((b"a=b&c", b"--x\r\n\r\n", json.dumps(base).encode(), b"\x00\x01")), ctype
    if kind == "non_utf8":
        body = b"&".join(k.encode() + b"=" + rng.choice((b"\xff\xfe", b"%ff%fe", b"\xc3(", b"%C0%AF")) for k in base)
        return body, "application/x-www-form-urlencoded"
    if kind == "huge_body":
        size = rng.choice((70_000, 300_000, 1_100_000))
        return b"a=" + b"x" * size, "application/x-www-form-urlencoded"
    from urllib.parse import urlencode

    return urlencode(base).encode(), "application/x-www-form-urlencoded"


KINDS = (
    "wrong_method",
    "bad_json",
    "deep_json",
    "numbers",
    "types",
    "content_type",
    "non_utf8",
    "huge_body",
    "huge_query",
    "path_ids",
    "traversal",
    "cookies",
    "unknown_action",
    "last_event_id",
    "form",
)


def make_case(kind: str, routes, visitor: Visitor, rng: random.Random, signer=None) -> Case:
    """One malformed request of class `kind` on a route drawn from `routes`."""
    if kind == "path_ids":  # routes with an id in the path
        routes = [r for r in routes if "_id}" in r[0]] or routes
    elif kind in ("bad_json", "deep_json", "numbers", "types", "content_type", "non_utf8"):  # routes that read a body
        routes = [r for r in routes if "POST" in r[1]] or routes
        if kind in ("numbers", "types") and rng.random() < 0.6:  # mostly the task actions, where numbers are read
            routes = [r for r in routes if "{action}" in r[0]] or routes
    template, methods = rng.choice(routes)
    admin = "/admin" in template
    cookies = dict(visitor.admin_cookies if admin else visitor.cookies)
    csrf = visitor.admin_csrf if admin else visitor.csrf
    method = rng.choice(sorted(methods))
    headers = {"Accept": rng.choice(("application/json", "text/html", "*/*")), "X-CSRF-Token": csrf}
    path = fill(template, visitor, rng, hostile=kind in ("path_ids", "traversal", "unknown_action"))
    content = None
    if kind == "wrong_method":
        method = rng.choice([m for m in METHODS if m not in methods] or ["PUT"])
    elif kind == "traversal":
        path = rng.choice((path, f"/static/{rng.choice(TRAVERSAL)}", f"/s/{visitor.slug}/{rng.choice(TRAVERSAL)}"))
    elif kind == "unknown_action":
        path = f"/s/{visitor.slug}/a/{visitor.assignment_id or 1}/{rng.choice(ACTIONS)}"
        method = "POST"
    elif kind == "huge_query":
        path += "?" + rng.choice(("a=" + "x" * 60_000, "&".join(f"k{i}=v" for i in range(3000)), "token=" + "%ff" * 50))
    elif kind == "cookies":
        forged = rng.choice(
            (
                "x",
                "eyJhIjoxfQ.forged.sig",
                "\u00e9" * 10,
                "a" * 5000,
                signer.identity_cookie(10**30) if signer else "x",  # validly signed, absurd id
                signer.identity_cookie(-5) if signer else "x",
                signer._id.dumps({"a": "1", "n": 5}) if signer else "x",
                signer._id.dumps([1, 2]) if signer else "x",
            )
        )
        cookies = {rng.choice(("dialeval_id", "dialeval_admin")): forged}
        if rng.random() < 0.5:
            headers["X-Dialeval-Session"] = forged
    elif kind == "last_event_id":
        path = f"/s/{visitor.slug}/a/{visitor.assignment_id or 1}/events"
        method = "GET"
        headers["Last-Event-ID"] = rng.choice(("9" * 5000, "-1", "1e400", "١٢٣", "18446744073709551616", ""))
        path += rng.choice(("", "?cursor=1e400", "?cursor=" + "9" * 30, "?cursor=-5", "?generation=%00"))
    if method in ("POST", "PUT", "PATCH") or kind in ("huge_body", "bad_json", "deep_json"):
        body_kind = kind if kind not in ("wrong_method", "path_ids", "traversal", "cookies", "huge_query") else "form"
        content, ctype = body_for(body_kind, visitor, rng)
        if ctype:
            headers["Content-Type"] = ctype
    return Case(kind, method, path, headers, content, cookies)


def send(http: httpx.Client, case: Case) -> Result:
    headers: dict[str, Any] = {k: v.encode("utf-8") for k, v in case.headers.items()}  # bytes: any header
    if case.cookies:
        headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in case.cookies.items()).encode("utf-8")
    try:
        http.cookies.clear()
        r = http.request(case.method, case.path, headers=headers, content=case.content)
    except httpx.TimeoutException:
        return Result(case, None, "no answer in time")
    except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
        # the server refused the request and closed the connection while the client was still
        # sending (uvicorn does so for a request line or headers over its limit): not a hang
        return Result(case, CLOSED, None)
    except httpx.HTTPError as exc:
        return Result(case, None, f"connection: {exc!r}")
    problem = None
    if r.status_code >= 500 and r.status_code != 503:
        problem = f"{r.status_code}"
    elif "Traceback (most recent call last)" in r.text or 'File "/' in r.text:
        problem = "traceback in the response"
    return Result(case, r.status_code, problem)


def raw_request(host: str, port: int, data: bytes, timeout: float = 30.0) -> bytes:
    """Bytes on a socket (what no client library would send: bad bytes in the path, a lying
    Content-Length); returns the answer's bytes (b"" when the server closed without one)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        try:
            while chunk := s.recv(65536):
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks) and len(b"".join(chunks)) > 64:
                    break
        except TimeoutError:
            pass
        return b"".join(chunks)


RAW_REQUESTS = (
    b"GET /s/%ff%fe/ HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /?\xff=\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nCookie: dialeval_id=\xff\xfe\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nX-Dialeval-Session: \xff\r\n\r\n",
    b"POST /s/SLUG/start HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    b"POST /s/SLUG/start HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
    b"POST /s/SLUG/start HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"GET /static/../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
    b"BREW / HTTP/1.1\r\nHost: x\r\n\r\n",
)


def iter_cases(app, visitors: list[Visitor], rng: random.Random, n: int, kinds=KINDS) -> Iterator[Case]:
    routes = app_routes(app)
    for i in range(n):
        visitor = visitors[i % len(visitors)]
        signer = app.state.studies[visitor.slug].signer
        yield make_case(kinds[i % len(kinds)], routes, visitor, rng, signer)
