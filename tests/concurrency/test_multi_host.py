"""Two `dialeval serve` hosts sharing only PostgreSQL (each its own copy of the study folder and its
own loopback address), behind HAProxy (round-robin, no stickiness): an annotator's session, CSRF
token and completion code and the admin login work on either host; under load through the
balancer, with one host killed by `kill -9` mid-run, every acknowledged judgment is stored once,
no assignment is held twice and no unit goes over its cap."""

from __future__ import annotations

import re
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from dialeval.simulate import load
from tests.conftest import fresh_schema

ANSWER = load.ANSWER


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    """One pair of hosts for the module (starting them is most of its time): the session test runs
    first on both, then the load test kills the second one (so it must stay last here)."""
    if shutil.which("haproxy") is None and not load.Path("/usr/sbin/haproxy").exists():
        pytest.fail("HAProxy is missing: scripts/setup.sh installs it (apt-get install haproxy)")
    with fresh_schema() as pg_url:
        yield from _two_hosts(tmp_path_factory.mktemp("multi-host"), pg_url)


def _two_hosts(tmp_path, pg_url):
    first = load.make_study(tmp_path / "host-a", conversations_per_pair=40, humans=20, database=pg_url)
    second = shutil.copytree(first, tmp_path / "host-b")  # what a deploy copies to a second machine
    hosts = []
    balancer = None
    try:
        # started at once on a fresh database, as a deploy starts two machines: both would build the
        # study's units, and one failed on the unique key until the build took a lock of its own
        # (Store.preparing)
        hosts.append(load.start_host(first, workers=2, host="127.0.0.2", extra=["--db-connections", "6"], wait=False))
        hosts.append(load.start_host(second, workers=1, host="127.0.0.3", extra=["--db-connections", "4"], wait=False))
        for h in hosts:
            load.wait_healthy(h.url, h.process, h.log, 120)
        balancer = load.start_balancer([h.url for h in hosts], tmp_path)
        yield hosts, balancer, pg_url
    finally:
        if balancer is not None:
            load.stop_balancer(balancer)
        for h in hosts:
            load.stop_host(h)


def test_session_and_admin_work_on_either_host(two_hosts):
    hosts, _balancer, _url = two_hosts
    a, b = hosts
    # the signing key and admin token agree: stored once in the database, copied to each folder
    assert (a.folder / ".secret").read_text() == (b.folder / ".secret").read_text()
    token = (a.folder / ".admin-token").read_text().strip()
    assert token == (b.folder / ".admin-token").read_text().strip()
    for h in hosts:
        assert (
            httpx.get(f"{h.url}/s/load-test/admin", params={"token": token}, follow_redirects=True).status_code == 200
        )
    # one annotator, every request on the other host than the one before
    # (behind the balancer both hosts have one name; here the cookie is carried over by hand)
    pid = f"multi{uuid.uuid4().hex[:8]}"
    r = httpx.get(f"{a.url}/s/load-test/", params={"PROLIFIC_PID": pid}, follow_redirects=False)
    jar = {"dialeval_id": r.cookies["dialeval_id"]}
    page = httpx.get(f"{b.url}/s/load-test/consent", cookies=jar)
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    assert (
        httpx.post(
            f"{a.url}/s/load-test/consent", data={"csrf": csrf, "agree": "yes"}, cookies=jar, headers={"Origin": a.url}
        ).status_code
        == 303
    )
    assert (
        httpx.post(
            f"{b.url}/s/load-test/instructions", data={"csrf": csrf}, cookies=jar, headers={"Origin": b.url}
        ).status_code
        == 303
    )
    answered = 0
    for turn in range(20):
        here = hosts[turn % 2]
        page = httpx.get(f"{here.url}/s/load-test/task", cookies=jar, follow_redirects=True)
        if page.url.path.endswith("/done"):
            break
        action = re.search(r'<form method="post" action="([^"]+)" data-ajax', page.text).group(1)
        pos = re.search(r'name="position" value="(\d+)"', page.text).group(1)
        there = hosts[(turn + 1) % 2]
        ans = httpx.post(
            there.url + action,
            cookies=jar,
            headers={"Accept": "application/json", "Origin": there.url},
            data={"csrf": csrf, **ANSWER, "position": pos, "request_id": uuid.uuid4().hex},
        )
        assert ans.status_code == 200 and ans.json()["ok"], ans.text
        answered += 1
    assert answered == 10  # 2 packages of 5 segments
    done_a = httpx.get(f"{a.url}/s/load-test/done", cookies=jar)
    done_b = httpx.get(f"{b.url}/s/load-test/done", cookies=jar)
    code = re.compile(r"\b[0-9A-F]{10}\b")
    assert code.findall(done_a.text) and code.findall(done_a.text) == code.findall(done_b.text)


def test_load_through_the_balancer_with_one_host_killed(two_hosts):
    hosts, balancer, url = two_hosts
    killed = []

    def during(elapsed: float) -> None:
        if elapsed >= 2.5 and not killed:
            load.kill_host(hosts[1])
            killed.append(elapsed)

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API may hold the main thread's loop
        res = pool.submit(load.run_load, balancer.url, "load-test", 16, 7.0, None, during).result()
    assert killed
    assert len(res.acknowledged) > 20, (res.statuses, res.errors[:5])
    assert res.statuses.get(500, 0) == 0, res.statuses
    load.check_invariants(url, res.acknowledged, cap=2)
    # the surviving host goes on alone behind the balancer
    time.sleep(1.5)
    after = httpx.get(balancer.url + "/healthz", timeout=10)
    assert after.status_code == 200
