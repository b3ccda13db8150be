"""Issue 8 through the real HTTP flow (uvicorn on loopback, httpx clients, SQLite file or PostgreSQL):
completion earned, expiry fair to people and statistics, identity that holds, input hygiene, errors."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import httpx
import yaml

from dialeval import clock
from dialeval.store import work
from dialeval.study import open_study

from .studies import make_acute_study, make_stb_study
from .test_live_support import LiveServer, make_live_study, rid


# -- a browser-like HTTP client ----------------------------------------------------------------------
class Visitor:
    """An annotator's browser speaking HTTP: follows redirects, keeps cookies (unless told not to)."""

    def __init__(self, server: LiveServer, keep_cookies: bool = True, base: str | None = None):
        self.server = server
        self.keep_cookies = keep_cookies
        self.http = httpx.Client(base_url=base or server.url, timeout=60, follow_redirects=False, verify=False)
        self.csrf = ""
        self.last: httpx.Response | None = None

    def url(self, path: str = "") -> str:
        return f"/s/{self.server.slug}/{path}"

    def request(self, method: str, url: str, **kw) -> httpx.Response:
        """One navigation, following redirects by hand (so a browser without cookies can be played)."""
        kw.setdefault("headers", {"Accept": "text/html"})
        r = self.http.request(method, url, **kw)
        for _ in range(10):
            if not self.keep_cookies:
                self.http.cookies.clear()
            if r.status_code not in (301, 302, 303, 307):
                break
            r = self.http.get(r.headers["location"], headers={"Accept": "text/html"})
        self.last = r
        m = re.search(r'name="csrf" value="([^"]+)"', r.text)
        if m:
            self.csrf = m.group(1)
        return r

    def get(self, url: str) -> httpx.Response:
        return self.request("GET", url)

    def form(self, url: str, data: dict) -> httpx.Response:
        return self.request("POST", url, data={"csrf": self.csrf, **data})

    def enter(self, params: dict | None = None) -> httpx.Response:
        """The study link (with platform parameters), consent and instructions: lands on the task."""
        r = self.get(self.url() + ("?" + httpx.QueryParams(params).__str__() if params else ""))
        if "/start" in r.text and params is None:
            r = self.form(self.url("start"), {})
        r = self.form(str(r.url), {"agree": "yes"})
        return self.form(str(r.url), {})

    def post_action(self, page: httpx.Response, data: dict, action: str | None = None) -> httpx.Response:
        url = action or re.search(r'<form method="post" action="([^"]+)" data-ajax', page.text).group(1)
        url = url.replace("&amp;", "&")
        r = self.http.post(
            url, data={"csrf": self.csrf, "request_id": rid(), **data}, headers={"Accept": "application/json"}
        )
        if not self.keep_cookies:
            self.http.cookies.clear()
        return r


def acute_answer(page: httpx.Response, v: Visitor) -> httpx.Response:
    r = v.post_action(page, {"choice": "1", "justification": "sounds more natural"})
    assert r.status_code == 200 and r.json()["ok"], r.text
    return r


def admin_client(server: LiveServer) -> httpx.Client:
    c = httpx.Client(base_url=server.url, timeout=60, follow_redirects=True)
    c.get(f"/s/{server.slug}/admin", params={"token": server.served.admin_token})
    return c


def admin_csrf(c: httpx.Client, server: LiveServer) -> str:
    page = c.get(f"/s/{server.slug}/admin")
    return re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)


def answer_segment(v: Visitor, page: httpx.Response) -> httpx.Response:
    pos = re.search(r'name="position" value="(\d+)"', page.text).group(1)
    r = v.post_action(
        page,
        {
            "position": pos,
            "entity0": "bot",
            "entity1": "human",
            "fluency": "0",
            "sensibleness": "1",
            "specificity": "tie",
        },
    )
    assert r.status_code == 200 and r.json()["ok"], r.text
    return r


# -- 1. completion is earned -------------------------------------------------------------------------
def test_done_gives_a_code_only_for_a_complete_session(tmp_path):
    folder = make_acute_study(tmp_path / "a", onboarding=False, comparisons=2)
    with LiveServer([folder]) as server:
        v = Visitor(server)
        page = v.enter()
        assert page.url.path.endswith("/task")
        done = v.get(v.url("done"))  # nothing done yet: back to the task, no code
        assert done.url.path.endswith("/task") and "completion-code" not in done.text
        acute_answer(page, v)
        done = v.get(v.url("done"))  # one of two comparisons: still the task
        assert done.url.path.endswith("/task") and "completion-code" not in done.text
        acute_answer(done, v)
        done = v.get(v.url("done"))
        assert done.url.path.endswith("/done")
        code = re.search(r'id="completion-code">([^<]+)<', done.text).group(1)
        # the admin page lists the code with its completion state
        admin = admin_client(server)
        page = admin.get(f"/s/{server.slug}/admin").text
        assert code in page and ">complete<" in page
        rows = list(csv.DictReader(io.StringIO(admin.get(f"/s/{server.slug}/admin/approvals.csv").text)))
        assert [(r["state"], r["completion_code"], r["decision"]) for r in rows] == [("complete", code, "approve")]


def test_prolific_and_mturk_get_their_platform_end_only_when_complete(tmp_path):
    folder = make_acute_study(tmp_path / "a", onboarding=False, comparisons=1)
    data = yaml.safe_load((folder / "study.yaml").read_text())
    data["recruitment"] = {"completion_code": "C0DE42"}
    (folder / "study.yaml").write_text(yaml.safe_dump(data))
    with LiveServer([folder]) as server:
        pro = Visitor(server)
        page = pro.enter({"PROLIFIC_PID": "pid-1", "STUDY_ID": "st-9", "SESSION_ID": "se-1"})
        r = pro.http.get(pro.url("done"))
        assert r.status_code == 303 and r.headers["location"].endswith("/task")  # not app.prolific.com
        acute_answer(page, pro)
        r = pro.http.get(pro.url("done"))
        assert (
            r.status_code == 303 and r.headers["location"] == "https://app.prolific.com/submissions/complete?cc=C0DE42"
        )
        Visitor(server).enter({"PROLIFIC_PID": "pid-2", "STUDY_ID": "st-9", "SESSION_ID": "se-2"})  # no work

        turk = Visitor(server)
        page = turk.enter(
            {"workerId": "W1", "assignmentId": "A1", "hitId": "H1", "turkSubmitTo": "https://workersandbox.mturk.com"}
        )
        assert "externalSubmit" not in turk.get(turk.url("done")).text
        # the worker comes back through another assignment of the HIT: both ids are kept
        turk.get(turk.url() + "?workerId=W1&assignmentId=A2&hitId=H1")
        page = turk.get(turk.url("task"))
        acute_answer(page, turk)
        done = turk.get(turk.url("done"))
        assert "externalSubmit" in done.text and 'value="A2"' in done.text

        admin = admin_client(server)
        ids = admin.get(f"/s/{server.slug}/admin/approvals/prolific.txt").text.split()
        assert ids == ["pid-1"]
        body = admin.get(f"/s/{server.slug}/admin/approvals/prolific.json").json()
        assert body == {"study_id": "st-9", "participant_ids": ["pid-1"]}
        rows = list(csv.DictReader(io.StringIO(admin.get(f"/s/{server.slug}/admin/approvals/mturk.csv").text)))
        assert [(r["AssignmentId"], r["WorkerId"], r["Approve"], r["Reject"]) for r in rows] == [
            ("A1", "W1", "", ""),
            ("A2", "W1", "x", ""),
        ]


def test_nothing_left_means_no_code(tmp_path):
    folder = make_stb_study(
        tmp_path / "s",
        per_pair=1,
        humans=1,
        exchanges=[1],
        bot_segments=3,
        human_segments=0,
        packages_per_annotator=1,
        annotations_per_segment=1,
    )
    with LiveServer([folder]) as server:
        first = Visitor(server)
        page = first.enter()
        assert page.url.path.endswith("/task")
        late = Visitor(server)
        end = late.enter()
        assert end.url.path.endswith("/done") and 'id="nothing-left"' in end.text
        assert "completion-code" not in end.text


# -- 2. expiry fair to people and to statistics -------------------------------------------------------
def stb_two_packages(tmp_path: Path) -> Path:
    folder = make_stb_study(
        tmp_path / "s",
        per_pair=2,
        humans=0,
        exchanges=[1],
        bot_segments=3,
        human_segments=0,
        packages_per_annotator=1,
        annotations_per_segment=2,
    )
    data = yaml.safe_load((folder / "study.yaml").read_text())
    data["annotation"] = {"expire_minutes": 0.05}  # 3 s
    (folder / "study.yaml").write_text(yaml.safe_dump(data))
    return folder


def test_expired_assignment_comes_back_when_nobody_took_it(tmp_path):
    with LiveServer([stb_two_packages(tmp_path)]) as server:
        a = Visitor(server)
        page = a.enter()
        action = re.search(r'action="([^"]+)" data-ajax', page.text).group(1)
        answer_segment(a, page)
        clock.advance(3.5)
        back = a.get(a.url("task"))
        assert re.search(r'action="([^"]+)" data-ajax', back.text).group(1) == action  # the same package
        assert "Welcome back" in back.text and "Segment 2 of" in back.text
        answer_segment(a, back)  # and the answers go on counting on it
        assert len(work.list_judgments(server.store, server.study_id)) == 2


def test_expired_and_reassigned_gives_the_truth_and_fresh_work(tmp_path):
    with LiveServer([stb_two_packages(tmp_path)]) as server:
        a = Visitor(server)
        page_a = a.enter()
        answer_segment(a, page_a)  # one judgment on package X, then A leaves
        b = Visitor(server)
        page_b = b.enter()  # X is still A's: B gets Y and finishes it
        while "Segment" in page_b.text:
            answer_segment(b, page_b)
            page_b = b.get(b.url("task"))
        clock.advance(3.5)  # A's X expires
        c = Visitor(server)
        c.enter()  # least used: X (0) before Y (1)
        x = work.annotator_assignments(server.store, server.study_id, 1, include_expired=True)[0]
        c_units = [u.unit_id for u in work.annotator_assignments(server.store, server.study_id, 3)]
        assert c_units == [x.unit_id]
        back = a.get(a.url("task"))
        assert "given to somebody else" in back.text and back.url.path.endswith("/task")
        statuses = [
            s.status for s in work.annotator_assignments(server.store, server.study_id, 1, include_expired=True)
        ]
        assert statuses == ["abandoned", "assigned"]
        # A's early judgment is kept, flagged, and not counted
        judgments = work.list_judgments(server.store, server.study_id, include_excluded=True)
        assert len(judgments) == len(work.list_judgments(server.store, server.study_id)) + 1
        export = admin_client(server).get(f"/s/{server.slug}/admin/export.csv").text
        rows = list(csv.DictReader(io.StringIO(export)))
        flagged = [r for r in rows if r["excluded_reason"]]
        assert (
            len(flagged) == 1
            and flagged[0]["excluded_reason"] == "assignment expired and was given to another annotator"
        )
        dataset = server.store.load_dataset(server.study_id)
        assert [j.meta.get("excluded") for j in dataset.judgments].count(
            "assignment expired and was given to another annotator"
        ) == 1


def test_returned_submission_frees_its_work(tmp_path):
    folder = make_stb_study(
        tmp_path / "s",
        per_pair=1,
        humans=1,
        exchanges=[1],
        bot_segments=3,
        human_segments=0,
        packages_per_annotator=1,
        annotations_per_segment=1,
    )
    with LiveServer([folder]) as server:
        p = Visitor(server)
        page = p.enter({"PROLIFIC_PID": "gone-1", "STUDY_ID": "s", "SESSION_ID": "x"})
        answer_segment(p, page)
        assert Visitor(server).enter().url.path.endswith("/done")  # nothing left for another one
        admin = admin_client(server)
        r = admin.post(
            f"/s/{server.slug}/admin/returned",
            data={"csrf": admin_csrf(admin, server), "ids": "gone-1\n"},
            headers={"Accept": "application/json", "Origin": server.url},
        )
        assert r.json() == {"ok": True, "marked": 1, "assignments_freed": 1, "unknown": []}
        page = Visitor(server).enter()
        assert page.url.path.endswith("/task") and "Segment 1 of" in page.text
        rows = list(csv.DictReader(io.StringIO(admin.get(f"/s/{server.slug}/admin/export.csv").text)))
        assert [r["excluded_reason"] for r in rows] == ["submission returned or timed out on the platform"]


def test_the_admin_pages_mark_returned_button_frees_the_work(tmp_path):
    """The per-annotator "Mark returned" form of the admin page (once shadowed by the block/flag route)."""
    folder = make_stb_study(
        tmp_path / "s",
        per_pair=1,
        humans=1,
        exchanges=[1],
        bot_segments=3,
        human_segments=0,
        packages_per_annotator=1,
        annotations_per_segment=1,
    )
    with LiveServer([folder]) as server:
        p = Visitor(server)
        answer_segment(p, p.enter({"PROLIFIC_PID": "gone-2", "STUDY_ID": "s", "SESSION_ID": "x"}))
        assert Visitor(server).enter().url.path.endswith("/done")  # nothing left for another one
        admin = admin_client(server)
        page = admin.get(f"/s/{server.slug}/admin").text
        action = re.search(r'<form method="post" action="([^"]+/returned)"', page).group(1)
        r = admin.post(
            action, data={"csrf": admin_csrf(admin, server)}, headers={"Accept": "text/html", "Origin": server.url}
        )
        assert r.status_code == 200 and r.url.path == f"/s/{server.slug}/admin", r.text
        page = Visitor(server).enter()
        assert page.url.path.endswith("/task") and "Segment 1 of" in page.text


# -- 3. identity that holds --------------------------------------------------------------------------
def test_second_browser_is_asked_to_confirm_and_the_first_is_signed_out(tmp_path):
    folder = make_acute_study(tmp_path / "a", onboarding=False, comparisons=2)
    with LiveServer([folder]) as server:
        first = Visitor(server)
        first.enter({"PROLIFIC_PID": "p-77", "STUDY_ID": "s", "SESSION_ID": "1"})
        assert first.get(first.url("task")).status_code == 200
        # the same browser following the link again keeps its session
        assert first.get(first.url() + "?PROLIFIC_PID=p-77&STUDY_ID=s&SESSION_ID=1").url.path.endswith("/consent")
        second = Visitor(server)
        page = second.get(second.url() + "?PROLIFIC_PID=p-77&STUDY_ID=s&SESSION_ID=1")
        assert 'id="second-browser"' in page.text and second.get(second.url("task")).status_code == 403
        ticket = re.search(r'name="ticket" value="([^"]+)"', page.text).group(1)
        r = second.request(
            "POST",
            second.url("confirm-browser"),
            data={"ticket": ticket, "meta": "{}"},
            headers={"Accept": "text/html", "Origin": server.url},
        )
        assert r.url.path.endswith("/consent")
        assert second.get(second.url("task")).status_code == 200
        assert first.get(first.url("task")).status_code == 403  # signed out
        ann = work.find_annotator(server.store, server.study_id, "p-77")
        assert [e["kind"] for e in work.list_events(server.store, server.study_id, "session-moved")] == [
            "session-moved"
        ] and ann is not None


def test_second_browser_refused_when_the_study_says_so(tmp_path):
    folder = make_acute_study(tmp_path / "a", onboarding=False, comparisons=2)
    data = yaml.safe_load((folder / "study.yaml").read_text())
    data["recruitment"] = {"platform": "mturk", "second_browser": "refuse"}
    (folder / "study.yaml").write_text(yaml.safe_dump(data))
    with LiveServer([folder]) as server:
        Visitor(server).enter({"workerId": "W9", "assignmentId": "A9", "hitId": "H"})
        r = Visitor(server).get(f"/s/{server.slug}/?workerId=W9&assignmentId=A9&hitId=H")
        assert r.status_code == 403 and "another browser" in r.text
        assert "<html" in r.text  # a page, not JSON


def test_a_browser_without_cookies_goes_through_with_the_page_token(tmp_path):
    folder = make_acute_study(tmp_path / "a", onboarding=False, comparisons=2)
    with LiveServer([folder]) as server:
        v = Visitor(server, keep_cookies=False)
        page = v.enter({"workerId": "W5", "assignmentId": "A5", "hitId": "H5"})
        assert page.url.path.endswith("/task") and "sid=" in str(page.url)
        acute_answer(page, v)
        page = v.get(page.url.path + "?" + page.url.query.decode())
        acute_answer(page, v)
        done = v.get(v.url("done") + "?" + page.url.query.decode())
        assert "externalSubmit" in done.text and 'value="A5"' in done.text
        # without cookie and token: refused
        assert v.http.get(v.url("task"), headers={"Accept": "text/html"}).status_code == 403


# -- 5. input hygiene, errors ------------------------------------------------------------------------
def test_formula_and_control_characters_are_neutralised(tmp_path, pg_url):
    folder = make_acute_study(tmp_path / "a", onboarding=False, comparisons=2, database=pg_url)
    with LiveServer([folder]) as server:
        v = Visitor(server)
        page = v.enter()
        why = '=HYPERLINK("http://evil.example","see") click here'
        r = v.post_action(page, {"choice": "1", "justification": why})
        assert r.status_code == 200, r.text
        page = v.get(v.url("task"))
        r = v.post_action(page, {"choice": "2", "justification": "nul\x00 and bell\x07 gone"})
        assert r.status_code == 200, r.text  # PostgreSQL saw no NUL
        texts = [j.justification for j in work.list_judgments(server.store, server.study_id)]
        assert texts == [why, "nul and bell gone"]
        export = admin_client(server).get(f"/s/{server.slug}/admin/export.csv").text
        rows = list(csv.DictReader(io.StringIO(export)))
        assert rows[0]["justification"] == "'" + why


def test_errors_are_pages_for_browsers_and_json_for_fetch(tmp_path):
    folder = make_acute_study(tmp_path / "a", onboarding=False)
    with LiveServer([folder]) as server:
        c = httpx.Client(base_url=server.url)
        r = c.get("/no/such/page", headers={"Accept": "text/html,application/xhtml+xml"})
        assert r.status_code == 404 and r.headers["content-type"].startswith("text/html") and "<html" in r.text
        r = c.get("/no/such/page", headers={"Accept": "*/*"})  # fetch()
        assert r.status_code == 404 and r.json()["ok"] is False
        r = c.get(f"/s/{server.slug}/start", headers={"Accept": "text/html"})
        assert r.status_code == 405 and "<html" in r.text
        r = c.get(f"/s/{server.slug}/task", headers={"Accept": "text/html"})
        assert r.status_code == 403 and "<html" in r.text


def test_watch_with_a_bad_timeout_is_a_4xx(tmp_path):
    folder = make_live_study(tmp_path / "s", "single-model", ["repeat"])
    with LiveServer([folder]) as server:
        from .test_live_support import LiveClient

        client = LiveClient(server)
        client.enter()
        client.task()
        client.await_reply()
        for bad in ("abc", {"a": 1}, [1], "nan"):
            r = client.act("watch", {"cursor": 0, "timeout": bad})
            assert r.status_code == 400 and "timeout" in r.json()["error"], (bad, r.text)
        assert client.act("watch", {"cursor": 0, "timeout": "0.1"}).status_code == 200
        client.close()


def test_bot_replies_are_cleaned_and_cut(tmp_path):
    from tests.bots.fake_openai_server import start_fake_openai

    with start_fake_openai(mode="ok", reply=lambda body: "x\x00y" + "z" * 300_000, ignore_stream=True) as base:
        bot = {"name": "big", "type": "openai", "options": {"base_url": str(base), "model": "fake"}}
        folder = make_live_study(tmp_path / "s", "single-model", [bot])
        data = yaml.safe_load((folder / "study.yaml").read_text())
        data["limits"] = {"bot_reply_chars": 500}
        (folder / "study.yaml").write_text(yaml.safe_dump(data))
        with LiveServer([folder]) as server:
            from .test_live_support import LiveClient

            client = LiveClient(server)
            client.enter()
            client.task()
            assert client.await_reply()[-1]["event"] == "done"
            conv = server.store.get_conversation(server.study_id, f"live-{client.assignment_id}")
            reply = conv.turns[-1].text
            assert reply.startswith("xyzzz") and "\x00" not in reply
            # one word longer than the limit is cut inside it; the worker sees that it was shortened
            assert reply.endswith(" … [answer shortened]") and len(reply) == 500 + len(" … [answer shortened]")
            client.close()


def test_import_refuses_oversized_text_naming_the_line_and_strips_nul(tmp_path):
    from typer.testing import CliRunner

    from dialeval.cli import app

    lines = [
        {"dialog": [[{"id": "human", "text": "hello\x00 there"}, {"id": "bot", "text": "hi"}]]},
        {"dialog": [[{"id": "human", "text": "y" * 1_000_000}, {"id": "bot", "text": "hi"}]]},
    ]
    src = tmp_path / "convs.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    result = CliRunner().invoke(app, ["import", "parlai", str(src), str(tmp_path / "st")])
    assert result.exit_code == 2, result.output
    assert "line 2" in result.output and "1,000,000 characters" in result.output
    src.write_text(json.dumps(lines[0]) + "\n")
    result = CliRunner().invoke(app, ["import", "parlai", str(src), str(tmp_path / "st2"), "--max-text-chars", "50"])
    assert result.exit_code == 0, result.output
    study = open_study(tmp_path / "st2")
    try:
        texts = [t.text for c in study.store.load_dataset(study.id).conversations for t in c.turns]
        assert "hello there" in texts
    finally:
        study.close()


def test_a_renamed_study_keeps_its_data(tmp_path):
    folder = make_acute_study(tmp_path / "a", onboarding=False, comparisons=1)
    with LiveServer([folder]) as server:
        v = Visitor(server)
        acute_answer(v.enter(), v)
        old_id = server.study_id
    data = yaml.safe_load((folder / "study.yaml").read_text())
    data["name"] = "acute-renamed"
    (folder / "study.yaml").write_text(yaml.safe_dump(data))
    with LiveServer([folder]) as server:
        assert server.slug == "acute-renamed" and server.study_id == old_id
        assert server.store.counts(server.study_id)["judgments"] == 1
        late = Visitor(server)
        assert late.enter().url.path.endswith("/task")  # a new annotator gets work, not a free code


def test_analysis_never_counts_excluded_judgments(tmp_path):
    """The report of a data set with flagged judgments equals the report without them, plus a count."""
    from dataclasses import replace

    from dialeval.analysis import analyze
    from dialeval.records import Annotator, Judgment

    folder = make_acute_study(tmp_path / "a", onboarding=False)
    with LiveServer([folder]) as server:  # builds the units
        dataset = server.store.load_dataset(server.study_id)
    units = [u for u in dataset.units if u.kind == "acute"][:12]
    judgments = []
    for i, u in enumerate(units):
        w = 0 if i % 3 else 1
        bots = u.payload["speakers_to_eval"]
        judgments.append(
            Judgment(
                annotator_id="a1",
                unit_id=u.id,
                question="preference",
                value={"winner": u.conversation_ids[w], "loser": u.conversation_ids[1 - w]},
                meta={"winner_bot": bots[w], "loser_bot": bots[1 - w]},
            )
        )
    people = [Annotator("a1", "link", {}), Annotator("a2", "link", {})]
    dataset = replace(dataset, judgments=judgments, annotators=people)
    twice = [
        replace(j, annotator_id="a2", meta={**j.meta, "excluded": "assignment expired unfinished"}) for j in judgments
    ]
    plain = analyze(dataset)
    flagged = analyze(replace(dataset, judgments=judgments + twice))
    assert flagged.pop("excluded_judgments") == {"n": 12, "reasons": {"assignment expired unfinished": 12}}
    assert json.dumps(flagged, default=str, sort_keys=True) == json.dumps(plain, default=str, sort_keys=True)
