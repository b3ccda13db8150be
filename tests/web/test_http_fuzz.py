"""No request, however malformed, gets a 5xx or a traceback: each gets a 4xx with a message.

The served demo app (every method's demo study) on uvicorn on loopback, driven over HTTP. First the
failure classes found by hand, one regression test each; then a property-based fuzz (Hypothesis)
over every route the app has (enumerated from the app, so new routes are covered).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from itsdangerous import TimestampSigner, URLSafeTimedSerializer

from dialeval.demo import create_demo
from dialeval.store import work

from . import http_fuzz as hf
from .test_live_direct_assessment import da_study
from .test_live_support import LiveClient, LiveServer


class ServerErrors(logging.Handler):
    """Records what the app logs as an error (an unexpected exception is logged before its 500)."""

    def __init__(self):
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The served demo (one study per method) with a signed-in annotator and admin per study."""
    folders = create_demo(tmp_path_factory.mktemp("demo"))
    errors = ServerErrors()
    loggers = [logging.getLogger(name) for name in ("dialeval", "uvicorn.error")]
    for logger in loggers:
        logger.addHandler(errors)
    with LiveServer(folders) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        visitors = [hf.sign_in(http, server.app, slug) for slug in server.app.state.studies]
        yield server, http, visitors, errors
    for logger in loggers:
        logger.removeHandler(errors)


def visitor_of(visitors, method: str) -> hf.Visitor:
    return next(v for v in visitors if v.slug == f"demo-{method}")


def post_json(http, visitor: hf.Visitor, path: str, raw: bytes, admin: bool = False) -> httpx.Response:
    cookies = visitor.admin_cookies if admin else visitor.cookies
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-CSRF-Token": visitor.admin_csrf if admin else visitor.csrf,
        "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items()),
    }
    http.cookies.clear()
    return http.post(path, content=raw, headers=headers)


def assert_message(r: httpx.Response, status: int | tuple[int, ...]) -> None:
    statuses = status if isinstance(status, tuple) else (status,)
    assert r.status_code in statuses, (r.status_code, r.text[:300])
    body = r.json()
    assert body["ok"] is False and body["error"] and "Traceback" not in r.text


def test_json_nested_900_levels_deep_is_a_400_on_every_post_route(demo):
    server, http, visitors, errors = demo
    v = visitor_of(visitors, "direct-assessment")
    posts = [
        hf.fill(t, v, random.Random(1), hostile=False) for t, methods in hf.app_routes(server.app) if "POST" in methods
    ]
    assert len(posts) >= 6
    for path in posts:
        for depth in (900, 5000):
            r = post_json(http, v, path, hf.deep_json(depth), admin="/admin" in path)
            assert_message(r, 400)
            assert "nested" in r.json()["error"]
    assert not errors.records


def test_ids_above_2_63_in_a_path_are_a_422(demo):
    server, http, visitors, errors = demo
    v = visitor_of(visitors, "acute")
    for path, admin in (
        (f"/s/{v.slug}/a/99999999999999999999999999/submit", False),
        (f"/s/{v.slug}/a/{2**63}/submit", False),
        (f"/s/{v.slug}/admin/annotators/99999999999999999999999999/block", True),
        (f"/s/{v.slug}/admin/annotators/{2**64}/returned", True),
    ):
        r = post_json(http, v, path, json.dumps({"request_id": "abcdefgh12", "csrf": v.csrf}).encode(), admin)
        assert_message(r, 422)
    r = http.get(f"/s/{v.slug}/a/{2**70}/events", headers={"Accept": "application/json"})
    assert_message(r, (403, 422))
    assert not errors.records


def test_json_numbers_out_of_range_are_a_400(demo):
    server, http, visitors, errors = demo
    v = visitor_of(visitors, "spot-the-bot")
    for number in ("1e400", "-1e400", "NaN", "Infinity", "1" + "0" * 30):
        raw = f'{{"request_id": "abcdefgh12", "position": {number}, "cursor": {number}}}'.encode()
        r = post_json(http, v, f"/s/{v.slug}/a/{v.assignment_id}/segment", raw)
        assert_message(r, 400)
        assert "number" in r.json()["error"].lower()
    assert not errors.records


def test_a_5000_digit_last_event_id_and_cursor_are_refused_or_ignored(demo):
    server, http, visitors, errors = demo
    v = visitor_of(visitors, "single-model")
    cookie = "; ".join(f"{k}={val}" for k, val in v.cookies.items())
    url = f"/s/{v.slug}/a/{v.assignment_id}/events"
    http.cookies.clear()
    with http.stream("GET", url, headers={"Cookie": cookie, "Last-Event-ID": "9" * 5000}, timeout=10) as r:
        assert r.status_code == 200  # an unusable Last-Event-ID is ignored: the stream starts afresh
        assert next(r.iter_text()).startswith("retry:")
    r = http.get(url + "?cursor=" + "9" * 30, headers={"Cookie": cookie, "Accept": "application/json"})
    assert_message(r, 422)
    assert not errors.records


class LongAgo(TimestampSigner):
    def get_timestamp(self) -> int:
        return 1_000_000_000


def test_a_validly_signed_cookie_with_an_absurd_annotator_id_is_signed_out(demo):
    server, http, visitors, errors = demo
    for v in visitors:
        signer = server.app.state.studies[v.slug].signer
        expired = URLSafeTimedSerializer(signer.secret, salt=f"dialeval-identity:{v.slug}", signer=LongAgo)
        for forged in (
            signer.identity_cookie(10**30),  # validly signed, an id no database holds
            signer._id.dumps({"a": True, "n": "x"}),
            expired.dumps({"a": 1, "n": "x"}),  # validly signed in 2001: expired
            "x.y.z",
        ):
            http.cookies.clear()
            r = http.post(
                f"/s/{v.slug}/consent",
                data={"agree": "yes", "csrf": v.csrf},
                headers={"Cookie": f"dialeval_id={forged}", "Accept": "application/json"},
            )
            assert_message(r, 403)
            r = http.get(f"/s/{v.slug}/task", headers={"X-Dialeval-Session": forged, "Accept": "application/json"})
            assert_message(r, 403)
        r = http.post(f"/s/{v.slug}/confirm-browser", data={"ticket": signer._id.dumps({"move": 10**30})})
        assert r.status_code == 403
    assert not errors.records


def test_a_content_length_larger_than_the_body_gets_408_after_the_read_timeout(demo, monkeypatch):
    server, http, visitors, errors = demo
    from dialeval.web import limits

    middleware = server.app.middleware_stack  # the built stack: find our BodyLimits in it
    while not isinstance(middleware, limits.BodyLimits):
        middleware = middleware.app
    monkeypatch.setattr(middleware, "timeout_s", 1.0)
    slug = visitors[0].slug
    t0 = time.monotonic()
    answer = hf.raw_request(
        "127.0.0.1",
        server.port,
        f"POST /s/{slug}/start HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: 5000\r\n\r\nvolunteer=1".encode(),
        timeout=15,
    )
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert time.monotonic() - t0 < 10
    assert not errors.records


def test_bodies_above_the_limit_are_a_413_before_they_are_read(demo):
    server, http, visitors, errors = demo
    v = visitors[0]
    r = http.post(f"/s/{v.slug}/start", content=b"a=" + b"x" * 2_000_000, headers={"Accept": "application/json"})
    assert_message(r, 413)
    answer = hf.raw_request(
        "127.0.0.1",
        server.port,
        f"POST /s/{v.slug}/start HTTP/1.1\r\nHost: x\r\nContent-Length: {10**15}\r\n\r\n".encode(),
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_raw_malformed_requests_get_no_5xx(demo):
    server, http, visitors, errors = demo
    for raw in hf.RAW_REQUESTS:
        answer = hf.raw_request("127.0.0.1", server.port, raw.replace(b"SLUG", visitors[0].slug.encode()), timeout=10)
        status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
        assert 200 <= status < 500, (raw, answer[:200])  # an answer, never a 5xx (a bad cookie is ignored)
    assert not errors.records


def test_200_concurrent_identical_start_chat_requests_log_one_topic(tmp_path):
    with LiveServer([da_study(tmp_path)]) as server:
        c = LiveClient(server)
        c.enter()
        c.task()
        barrier = threading.Barrier(20)

        def post(_):
            if _ < 20:
                barrier.wait()
            return c.act(
                "start_chat", {"topic": "cooking", "opinion": "like"}, request_id="same-request-id-1"
            ).status_code

        with ThreadPoolExecutor(20) as pool:
            statuses = list(pool.map(post, range(200)))
        assert set(statuses) == {200}, statuses
        events = work.list_events(server.store, server.study_id, kind="da-topic")
        assert len(events) == 1
        assert work.get_assignment(server.store, c.assignment_id).state["stage"] == "chat"
        c.close()


@st.composite
def fuzz_case(draw, visitors, routes):
    kind = draw(st.sampled_from(hf.KINDS))
    visitor = draw(st.sampled_from(visitors))
    seed = draw(st.integers(0, 2**32))
    return kind, visitor, seed


def test_fuzz_every_route_of_the_demo_gets_no_5xx(demo):
    server, http, visitors, errors = demo
    routes = hf.app_routes(server.app)
    assert {"/s/{slug}/a/{assignment_id}/{action}", "/s/{slug}/admin"} <= {p for p, _ in routes}
    seen: dict[str, int] = {}

    @settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(fuzz_case(visitors, routes))
    def one(drawn):
        kind, visitor, seed = drawn
        signer = server.app.state.studies[visitor.slug].signer
        case = hf.make_case(kind, routes, visitor, random.Random(seed), signer)
        result = hf.send(http, case)
        seen[kind] = seen.get(kind, 0) + 1
        assert result.problem is None, (result.problem, case.method, case.path[:200], (case.content or b"")[:200])

    one()
    assert set(seen) == set(hf.KINDS)
    assert not errors.records, [r.getMessage() for r in errors.records]


def test_every_route_answers_a_wrong_method_and_garbage_with_a_4xx(demo):
    """Each route: a method it does not take and four malformation classes (in turn): none is a 5xx."""
    server, http, visitors, errors = demo
    rng = random.Random(5)
    for i, (template, methods) in enumerate(hf.app_routes(server.app)):
        for kind in ("wrong_method", *(hf.KINDS[(i + k) % len(hf.KINDS)] for k in range(0, len(hf.KINDS), 4))):
            case = hf.make_case(kind, [(template, methods)], rng.choice(visitors), rng, None)
            result = hf.send(http, case)
            assert result.problem is None, (result.problem, case.method, case.path[:200])
    assert not errors.records, [r.getMessage() for r in errors.records]
