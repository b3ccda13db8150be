"""A simulated annotator that uses the real web app over HTTP, as a person with a browser would.

It enters through the study link (volunteer, Prolific or plain link), agrees to the consent page,
reads the instructions, and then works on the task pages until the server sends it to the done
page: it reads the page (form actions, hidden fields, the live chat's ``data-stage``), chats in
the live methods, and posts its answers with the page's CSRF token and a fresh request id per
form -- sometimes twice (a double click), sometimes after reloading the page, sometimes leaving in
the middle of a unit and coming back later with the same cookies (the app's resume logic).

What a person *perceives* (which bot wrote the conversation shown on the left, which candidate
came from which bot) is looked up in the study's store by the assignment id the page's form
names; only the simulated decision uses it (through the latent strengths of :class:`SimTruth`).
The simulator also checks that the page shows what the store says it shows.
"""

from __future__ import annotations

import html
import http.client
import random
import re
import ssl
import time
import uuid
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, cast
from urllib.parse import urljoin, urlsplit

from .. import registry
from ..registry import SimulationStep
from ..store import work
from ..web.auth import IDENTITY_COOKIE
from ..web.pages import NEXT_PAGE_HEADER
from . import model
from .browser import Browser, BrowserError, Response
from .model import AnnotatorProfile, SimTruth

TOPICS = ("cooking", "football", "travel", "music", "films", "gardening", "books", "the weather", "pets", "hiking")
_ASSIGNMENT = re.compile(r'/s/[^/"]+/a/(\d+)/([a-z_\-]+)"')
_STAGE = re.compile(r'id="live"[^>]*data-stage="([a-z_]+)"')
_CSRF = re.compile(r'<meta name="csrf-token" content="([^"]*)"')
_NEXT_PAGE_INLINE = 'data-next-page="inline"'  # base.html, on a page whose answers bring the next one
# A shown text's block on a task page: `<div class="text">` holding the escaped raw text, or the
# `<div class="md">` of its Markdown (bot_markdown.py), which holds no further </div>.
_TEXT_BLOCK = re.compile(r'<div class="text">(.*?)</div>', re.DOTALL)


def shown_texts(fragment: str) -> list[str]:
    """The texts a page fragment shows, as read: tags out, entities decoded, whitespace collapsed."""
    return [_as_read(block) for block in _TEXT_BLOCK.findall(fragment)]


def _as_read(markup: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def shows(shown: str, stored: str) -> bool:
    """True when `shown` (from shown_texts) is `stored` as the page shows it: raw or as Markdown."""
    return shown in _read_forms(stored)


@lru_cache(maxsize=8192)
def _read_forms(stored: str) -> tuple[str, str]:
    # A stored text as the page shows it, raw and as Markdown. Kept: a load run's 200 annotators
    # check the same texts against every page (the Markdown render was a fifth of the client's CPU).
    from ..bot_markdown import render

    return _as_read(html.escape(stored)), _as_read(render(stored))


@cache
def _tls_context() -> ssl.SSLContext:
    # One certificate store for every simulated annotator (reading the CA bundle takes 16 ms CPU),
    # and a load run starts a browser for each of its annotators.
    return ssl.create_default_context()


class SimulationError(Exception):
    pass


@dataclass
class AnnotatorLog:
    """What one simulated annotator did (the crowd sums these)."""

    name: str
    careless: bool
    platform: str
    annotator_id: int | None = None  # database id, learned from the first assignment
    judgments: int = 0  # judgments the server accepted (a double submit counts once)
    request_ids: list[str] = field(default_factory=list)
    units_completed: int = 0
    assignments: list[int] = field(default_factory=list)
    abandoned: int = 0
    returned: int = 0
    refreshed: int = 0
    double_submits: int = 0
    messages: int = 0
    refused: list[str] = field(default_factory=list)  # 4xx messages (expected for careless input)
    errors: list[str] = field(default_factory=list)  # what should not happen
    finished: bool = False  # reached the done page
    seconds: float = 0.0  # simulated annotator time


class _Response:
    def __init__(self, resp: Response, external: str | None = None):
        self.resp = resp
        self.external = external  # a redirect to another site (Prolific completion URL)

    @property
    def path(self) -> str:
        return self.resp.path

    @property
    def text(self) -> str:
        return self.resp.text


class SimulatedAnnotator:
    """One person (profile) working on one study (slug) of a running app (base_url)."""

    def __init__(
        self,
        base_url: str,
        slug: str,
        method: str,
        store: Any,
        study_id: int,
        truth: SimTruth,
        profile: AnnotatorProfile,
        rng: random.Random,
        corpus: list | None = None,
        max_steps: int = 400,
        timeout: float = 60.0,
    ):
        self.base = base_url.rstrip("/")
        self.host = urlsplit(self.base).netloc
        self.slug, self.method, self.store, self.study_id = slug, method, store, study_id
        self.truth, self.profile, self.rng, self.corpus = truth, profile, rng, corpus
        self.max_steps = max_steps
        self.client = Browser(
            self.base, timeout=timeout, tls=_tls_context() if self.base.startswith("https:") else None
        )
        self.csrf = ""
        self._landed: _Response | None = None  # the page entering ended on (see enter)
        # where the last answer's reply sent the page (app.js follows `redirect`), when not the task page
        self._sent_to: str | None = None
        self.log = AnnotatorLog(profile.name, profile.careless, profile.platform)
        self._unit_plan: dict[int, dict[str, Any]] = {}
        self._conv_cache: dict[str, Any] = {}
        self._first_reads: dict[int, work.AssignmentInfo] = {}
        self._used_messages: dict[str, list[str]] = {}
        self._page_inline = False  # the page shown asks for the next task page in an answer's reply
        self.gone = False  # a step saw something it cannot handle: this annotator stops
        simulation = registry.get(method).simulation
        if simulation is None:
            raise SimulationError(f"method '{method}' has no simulated annotator")
        self.simulation = simulation
        self._step = cast(SimulationStep, registry.get(method).load_simulation_step())

    # -- HTTP ------------------------------------------------------------------------------------
    def url(self, path: str = "") -> str:
        return f"/s/{self.slug}/{path}"

    def _follow(self, resp: Response) -> _Response:
        for _ in range(10):
            if resp.status_code not in (301, 302, 303, 307, 308):
                break
            location = urljoin(resp.url, resp.headers["location"])
            if urlsplit(location).netloc != self.host:
                return _Response(resp, external=location)
            resp = self.client.get(location)
        self._read_csrf(resp)
        return _Response(resp)

    def _brought_page(self, url: str, html: str) -> _Response:
        """The next task page an answer's reply carried (routes_annotator.NEXT_PAGE_HEADER), read
        as the page it stands for."""
        headers = http.client.HTTPMessage()
        headers["content-type"] = "text/html; charset=utf-8"
        resp = Response(200, headers, urljoin(self.base + "/", url), html.encode("utf-8"))
        self._read_csrf(resp)
        return _Response(resp)

    def _read_csrf(self, resp: Response) -> None:
        if "text/html" in resp.headers.get("content-type", ""):
            m = _CSRF.search(resp.text)
            if m and m.group(1):
                self.csrf = m.group(1)
            # what app.js does on this page: ask for the next task page in an answer's reply
            self._page_inline = _NEXT_PAGE_INLINE in resp.text

    def get(self, path: str, params: dict | None = None) -> _Response:
        return self._follow(self.client.get(path, params=params))

    def post_form(self, path: str, data: dict) -> _Response:
        return self._follow(self.client.post(path, data=data))

    def submit(self, path: str, data: dict) -> _Response:
        """Send a session page's form (entry, consent, instructions) as app.js does: with fetch(),
        asking for the next page in the reply when the page does (data-next-page), which is then
        the page shown; a reply without a page is followed to its redirect. Without it, a plain
        form post and its redirect."""
        if not self._page_inline:
            return self.post_form(path, data)
        headers = {"Accept": "application/json", NEXT_PAGE_HEADER: "inline"}
        resp = self.client.post(path, data=data, headers=headers)
        try:
            reply = resp.json()
        except ValueError:
            reply = {}
        if resp.status_code != 200 or not reply.get("ok") or not isinstance(reply.get("redirect"), str):
            raise SimulationError(f"{path} answered {resp.status_code}: {resp.text[:200]}")
        target = urljoin(resp.url, reply["redirect"])
        if urlsplit(target).netloc != self.host:
            return _Response(resp, external=target)
        if isinstance(reply.get("page"), str):
            return self._brought_page(target, reply["page"])
        return self.get(target)

    def post_json(self, path: str, data: dict, request_id: str | None = None) -> tuple[int, dict]:
        """Post like the page's fetch(): form fields + csrf + request id, JSON answer. Waits out a 429.
        Asks for the next task page in the reply when the page does (app.js: data-next-page)."""
        body = {**data, "csrf": self.csrf, "request_id": request_id or uuid.uuid4().hex}
        headers = {"Accept": "application/json"}
        if self._page_inline:
            headers[NEXT_PAGE_HEADER] = "inline"
        for _ in range(60):
            resp = self.client.post(path, data=body, headers=headers)
            if resp.status_code == 429:
                time.sleep(min(5.0, float(resp.headers.get("retry-after", "1"))))
                continue
            try:
                payload = resp.json()
            except ValueError:
                payload = {"ok": False, "error": resp.text[:200]}
            return resp.status_code, payload
        return 429, {"ok": False, "error": "rate limited for too long"}

    # -- the session ---------------------------------------------------------------------------------
    def enter(self) -> None:
        """Open the study link, start, consent, read the instructions."""
        params: dict[str, str] = {}
        if self.profile.platform == "prolific":
            params = {"PROLIFIC_PID": f"sim{self.profile.name}", "STUDY_ID": "simstudy", "SESSION_ID": "simsession"}
        elif self.profile.platform == "volunteer":
            params = {"volunteer": "1"}
        page = self.get(self.url(), params=params)
        if not page.path.endswith("/consent"):
            if page.resp.status_code != 200:
                raise SimulationError(f"entry page answered {page.resp.status_code}")
            page = self.submit(self.url("start"), {"volunteer": "1"} if params.get("volunteer") else {})
        if not page.path.endswith("/consent"):
            raise SimulationError(f"start did not lead to the consent page but to {page.path}")
        page = self.submit(self.url("consent"), {"csrf": self.csrf, "agree": "yes"})
        if not page.path.endswith("/instructions"):
            raise SimulationError(f"consent did not lead to the instructions but to {page.path}")
        # the page the instructions lead to (the task page, in the reply or through the redirect): what
        # a browser shows next, read by run() instead of fetched a second time
        landed = self.submit(self.url("instructions"), {"csrf": self.csrf})
        self._landed = landed if landed.external or landed.path.endswith(("/task", "/done")) else None
        if self.log.annotator_id is None:
            self.log.annotator_id = self._signed_in_as()
        if self.log.annotator_id is not None:  # before any judgment: never counted as a person's
            self.mark_simulated(self.log.annotator_id)

    def mark_simulated(self, annotator_id: int) -> None:
        """Store this annotator as simulated (the client writes it; a load run defers it)."""
        work.mark_simulated(self.store, annotator_id)

    def _signed_in_as(self) -> int | None:
        """The annotator id in this browser's identity cookie. The payload of an itsdangerous token
        is readable without the key (only the signature needs it), as for any client of the app."""
        from itsdangerous import URLSafeTimedSerializer

        value = self.client.cookie(IDENTITY_COOKIE)
        if not value:
            return None
        _valid, payload = URLSafeTimedSerializer("-").loads_unsafe(value)
        try:
            return int(payload["a"])
        except (KeyError, TypeError, ValueError):
            return None

    def run(self) -> AnnotatorLog:
        try:
            self.enter()
            steps = 0
            while steps < self.max_steps and not self.gone:
                steps += 1
                page = self.next_page()
                if page.external or page.path.endswith("/done"):
                    self.log.finished = True
                    break
                if page.resp.status_code != 200:
                    self.log.errors.append(f"task page answered {page.resp.status_code}: {page.text[:200]}")
                    break
                aid = self._assignment_id(page.text)
                if aid is None:
                    self.log.errors.append(f"no task form on the task page: {page.text[:300]}")
                    break
                plan = self._plan(aid)
                plan["visits"] += 1
                if self.rng.random() < self.profile.refresh_p:  # reload before answering
                    again = self.get(self.url("task"))
                    self.log.refreshed += 1
                    if self._assignment_id(again.text) != aid:
                        self.log.errors.append(f"refresh showed another assignment than {aid}")
                    page = again
                if plan["abandon_at"] is not None and plan["visits"] > plan["abandon_at"]:
                    plan["abandon_at"] = None
                    self.log.abandoned += 1
                    if self.rng.random() >= self.profile.return_p:
                        break  # gone for good; the assignment expires on the server
                    self.log.returned += 1
                    self.enter()  # back later with the same cookies: resumes the open assignment
                    continue
                self.step(aid, page.text)
            else:
                if not self.gone:
                    self.log.errors.append("too many steps")
        except (BrowserError, SimulationError) as exc:
            self.log.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            self.client.close()
        return self.log

    def next_page(self) -> _Response:
        """The page the annotator sees next: the one the last step landed on (the task page after the
        instructions' redirect, or one an answer's reply brought), else the task page or where the
        last answer sent them."""
        page, self._landed = self._landed or self.get(self._sent_to or self.url("task")), None
        self._sent_to = None
        return page

    def _plan(self, aid: int) -> dict[str, Any]:
        plan = self._unit_plan.get(aid)
        if plan is None:
            abandon = self.rng.random() < self.profile.abandon_p
            last = self.simulation.abandon_within
            plan = {"visits": 0, "abandon_at": self.rng.randint(0, last) if abandon else None}
            self._unit_plan[aid] = plan
            self.log.assignments.append(aid)
            if self.log.annotator_id is None:
                info = work.get_assignment(self.store, aid)
                self.log.annotator_id = info.annotator_id if info else None
        return plan

    @staticmethod
    def _assignment_id(page: str) -> int | None:
        m = _ASSIGNMENT.search(page)
        return int(m.group(1)) if m else None

    def assignment(self, aid: int, *, as_first_read: bool = False) -> work.AssignmentInfo:
        """The assignment as the store has it now; `as_first_read`: as this annotator first read
        it, for what an assignment fixes when it is made (its unit, payload and shown order) and a
        step reads again at each form of one unit (Spot The Bot's segments)."""
        if as_first_read and aid in self._first_reads:
            return self._first_reads[aid]
        info = work.get_assignment(self.store, aid)
        if info is None:
            raise SimulationError(f"assignment {aid} is not in the store")
        self._first_reads.setdefault(aid, info)
        return info

    def conversation(self, conv_id: str):
        if conv_id not in self._conv_cache:
            self._conv_cache[conv_id] = self.store.get_conversation(self.study_id, conv_id)
        return self._conv_cache[conv_id]

    def act(self, aid: int, action: str, data: dict, judgment: bool | None = None) -> dict | None:
        """Post one action of the task page; counts accepted judgments; may double-submit."""
        request_id = uuid.uuid4().hex
        path = self.url(f"a/{aid}/{action}")
        status, payload = self.post_json(path, data, request_id)
        is_judgment = action in self.simulation.judgment_actions if judgment is None else judgment
        if status == 200 and payload.get("ok"):
            if is_judgment:
                self.log.judgments += 1
                self.log.request_ids.append(request_id)
            if self.rng.random() < self.profile.double_submit_p and action not in ("send", "watch", "reply"):
                self.log.double_submits += 1
                status2, payload2 = self.post_json(path, data, request_id)
                if status2 != 200 or not payload2.get("ok"):
                    self.log.errors.append(f"double submit of {action} refused: {status2} {payload2.get('error')}")
            if payload.get("done"):
                self.log.units_completed += 1
            redirect = payload.get("redirect")
            if isinstance(payload.get("page"), str) and isinstance(redirect, str):
                self._landed = self._brought_page(redirect, payload["page"])  # as app.js swaps it in
            elif isinstance(redirect, str) and not urlsplit(redirect).path.endswith("/task"):
                self._sent_to = redirect  # as the page does: e.g. the done page after the last answer
            return payload
        message = f"{action}: {status} {payload.get('error')}"
        if status in (400, 409):
            self.log.refused.append(message)
        else:
            self.log.errors.append(message)
        return None

    def think(self, kind: str) -> float:
        s = model.seconds(kind, self.rng, self.profile.speed)
        self.log.seconds += s
        return s

    def elapsed_ms(self, kind: str) -> str:
        """The time a person spends on this step, sent as the page would measure it (nothing sleeps)."""
        return str(int(self.think(kind) * 1000))

    # -- per method ----------------------------------------------------------------------------------
    def step(self, aid: int, page: str) -> None:
        """One step on a task page: the method's own (Method.simulation.step)."""
        self._step(self, aid, page)

    # live chats --------------------------------------------------------------------------------------
    def stage(self, page: str) -> str:
        """The live page's stage (its ``data-stage``)."""
        m = _STAGE.search(page)
        if m is None:
            raise SimulationError("the live page has no stage")
        return m.group(1)

    def follow_reply(self, aid: int, started: dict | None = None) -> None:
        """Ask for the bot's reply (if needed) and long-poll `watch` until it is stored or failed."""
        if started is None:
            started = self.act(aid, "reply", {}, judgment=False)
            if started is None or started.get("finished"):
                return
        cursor = 0
        for _ in range(120):
            res = self.act(aid, "watch", {"cursor": str(cursor), "timeout": "5"}, judgment=False)
            if res is None:
                return
            events = res.get("events", [])
            kinds = {e.get("event") for e in events}
            if "error" in kinds:
                msg = next(e.get("message") for e in events if e.get("event") == "error")
                self.log.errors.append(f"bot error: {msg}")
                return
            if "done" in kinds or "idle" in kinds or res.get("finished"):
                return
            cursor = int(res.get("cursor", cursor))
        self.log.errors.append("the bot reply never finished")

    def send(self, aid: int, conv_key: str) -> None:
        """Type one chat message (lines of the corpus; careless styles) and wait for the bot's reply."""
        used = self._used_messages.setdefault(conv_key, [])
        text = model.chat_message(
            self.rng,
            self.corpus,
            self.profile.careless,
            style=self.profile.careless_style,
            first=used[0] if used else None,
            used=set(used),
        )
        self.think("message")
        res = self.act(aid, "send", {"text": text}, judgment=False)
        if res is not None:
            used.append(text)
            self.log.messages += 1
            self.follow_reply(aid, res)

    def candidates_shown(self, page: str) -> list[str]:
        """The texts of the candidate replies on a pairwise live page, in page order."""
        return [
            t
            for label in re.findall(r'<label class="candidate">(.*?)</label>', page, re.DOTALL)
            for t in shown_texts(label)
        ]
