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
import random
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..store import work
from . import model
from .model import AnnotatorProfile, SimTruth

LIVE_METHODS = ("pairwise-turn", "single-model", "direct-assessment")
JUDGMENT_ACTIONS = {
    "acute": {"submit"},
    "spot-the-bot": {"segment"},
    "pairwise-turn": {"choose", "onboarding"},
    "single-model": {"rate", "final"},
    "direct-assessment": {"rate"},
}
# an abandoning annotator leaves before one of the first N page visits of a unit
ABANDON_WITHIN = {"acute": 0, "spot-the-bot": 5, "pairwise-turn": 8, "single-model": 8, "direct-assessment": 12}
TOPICS = ("cooking", "football", "travel", "music", "films", "gardening", "books", "the weather", "pets", "hiking")
_ASSIGNMENT = re.compile(r'/s/[^/"]+/a/(\d+)/([a-z_\-]+)"')
_STAGE = re.compile(r'id="live"[^>]*data-stage="([a-z_]+)"')
_CSRF = re.compile(r'<meta name="csrf-token" content="([^"]*)"')


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
    def __init__(self, resp: httpx.Response, external: str | None = None):
        self.resp = resp
        self.external = external  # a redirect to another site (Prolific completion URL)

    @property
    def path(self) -> str:
        return self.resp.url.path

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
        self.client = httpx.Client(base_url=self.base, timeout=timeout, follow_redirects=False)
        self.csrf = ""
        self.log = AnnotatorLog(profile.name, profile.careless, profile.platform)
        self._unit_plan: dict[int, dict[str, Any]] = {}
        self._conv_cache: dict[str, Any] = {}
        self._used_messages: dict[str, list[str]] = {}
        self._gone = False

    # -- HTTP ------------------------------------------------------------------------------------
    def url(self, path: str = "") -> str:
        return f"/s/{self.slug}/{path}"

    def _follow(self, resp: httpx.Response) -> _Response:
        for _ in range(10):
            if resp.status_code not in (301, 302, 303, 307, 308):
                break
            location = resp.headers["location"]
            parts = urlsplit(location)
            if parts.netloc and parts.netloc != self.host:
                return _Response(resp, external=location)
            resp = self.client.get(location)
        self._read_csrf(resp)
        return _Response(resp)

    def _read_csrf(self, resp: httpx.Response) -> None:
        if "text/html" in resp.headers.get("content-type", ""):
            m = _CSRF.search(resp.text)
            if m and m.group(1):
                self.csrf = m.group(1)

    def get(self, path: str, params: dict | None = None) -> _Response:
        return self._follow(self.client.get(path, params=params))

    def post_form(self, path: str, data: dict) -> _Response:
        return self._follow(self.client.post(path, data=data))

    def post_json(self, path: str, data: dict, request_id: str | None = None) -> tuple[int, dict]:
        """Post like the page's fetch(): form fields + csrf + request id, JSON answer. Waits out a 429."""
        body = {**data, "csrf": self.csrf, "request_id": request_id or uuid.uuid4().hex}
        for _ in range(60):
            resp = self.client.post(path, data=body, headers={"Accept": "application/json"})
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
            page = self.post_form(self.url("start"), {"volunteer": "1"} if params.get("volunteer") else {})
        if not page.path.endswith("/consent"):
            raise SimulationError(f"start did not lead to the consent page but to {page.path}")
        page = self.post_form(self.url("consent"), {"csrf": self.csrf, "agree": "yes"})
        if not page.path.endswith("/instructions"):
            raise SimulationError(f"consent did not lead to the instructions but to {page.path}")
        self.post_form(self.url("instructions"), {"csrf": self.csrf})

    def run(self) -> AnnotatorLog:
        try:
            self.enter()
            steps = 0
            while steps < self.max_steps and not self._gone:
                steps += 1
                page = self.get(self.url("task"))
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
                if not self._gone:
                    self.log.errors.append("too many steps")
        except (httpx.HTTPError, SimulationError) as exc:
            self.log.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            self.client.close()
        return self.log

    def _plan(self, aid: int) -> dict[str, Any]:
        plan = self._unit_plan.get(aid)
        if plan is None:
            abandon = self.rng.random() < self.profile.abandon_p
            last = ABANDON_WITHIN.get(self.method, 0)
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

    def assignment(self, aid: int) -> work.AssignmentInfo:
        info = work.get_assignment(self.store, aid)
        if info is None:
            raise SimulationError(f"assignment {aid} is not in the store")
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
        is_judgment = action in JUDGMENT_ACTIONS.get(self.method, ()) if judgment is None else judgment
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
        handler = {
            "acute": self.step_acute,
            "spot-the-bot": self.step_stb,
            "pairwise-turn": self.step_pw_turn,
            "single-model": self.step_single_model,
            "direct-assessment": self.step_da,
        }[self.method]
        handler(aid, page)

    def step_acute(self, aid: int, page: str) -> None:
        a = self.assignment(aid)
        order = a.shown_order or a.conversation_ids
        speakers = a.payload["speakers_to_eval"]
        bots = [speakers[a.conversation_ids.index(c)] for c in order]
        shown = _acute_sides(page)
        for n, conv_id in enumerate(order):
            conv = self.conversation(conv_id)
            texts = {t.text for t in conv.turns}
            if n < len(shown) and shown[n] and not set(shown[n]) <= texts:
                self.log.errors.append(f"assignment {aid}: side {n + 1} does not show conversation {conv_id}")
        question = a.payload.get("question")
        onboarding = a.unit_kind.endswith("onboarding")
        if self.profile.careless:
            choice = self.rng.randrange(2)
        else:
            choice = model.choose_pairwise(
                self.truth.strength(bots[0], question),
                self.truth.strength(bots[1], question),
                self.profile.side_bias,
                self.profile.noise,
                self.rng,
            )
        seconds = self.think("onboarding" if onboarding else "acute")
        self.act(
            aid,
            "submit",
            {
                "choice": str(choice + 1),
                "justification": model.justification(self.rng, self.profile.careless, f"speaker {choice + 1}"),
                "elapsed_ms": str(int(seconds * 1000)),
            },
        )

    def step_stb(self, aid: int, page: str) -> None:
        a = self.assignment(aid)
        m = re.search(r'name="position" value="(\d+)"', page)
        if m is None:
            raise SimulationError("no segment position on the Spot The Bot page")
        pos = int(m.group(1))
        seg = a.payload["segments"][(a.shown_order or [])[pos]]
        conv = self.conversation(seg["conversation"])
        shown = [html.unescape(t) for t in re.findall(r'<span class="text">(.*?)</span>', page, re.DOTALL)]
        expected = [t.text for t in conv.turns[: 2 + 2 * seg["exchanges"]]]
        if [s.strip() for s in shown] != [e.strip() for e in expected]:
            self.log.errors.append(f"assignment {aid}: segment {pos} does not show {seg['conversation']}")
        human = seg["human"]
        bots = list(conv.bots) if not human else ["human", "human"]
        k = seg["exchanges"]
        strengths = [self.truth.strength(b) for b in bots]
        careless = self.profile.careless
        data = {
            f"entity{e}": model.stb_label(
                not human and bots[e] != "human", strengths[e], k, self.rng, careless=careless
            )
            for e in (0, 1)
        }
        for f in ("fluency", "sensibleness", "specificity"):
            data[f] = model.stb_feature(strengths[0], strengths[1], self.profile.noise, self.rng, careless=careless)
        data["position"] = str(pos)
        data["elapsed_ms"] = str(int(self.think("spot-the-bot") * 1000))
        self.act(aid, "segment", data)

    # live chats --------------------------------------------------------------------------------------
    def _stage(self, page: str) -> str:
        m = _STAGE.search(page)
        if m is None:
            raise SimulationError("the live page has no stage")
        return m.group(1)

    def _follow_reply(self, aid: int, started: dict | None = None) -> None:
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

    def _send(self, aid: int, conv_key: str) -> None:
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
            self._follow_reply(aid, res)

    def _candidates_shown(self, page: str) -> list[str]:
        return [
            html.unescape(t).strip()
            for t in re.findall(r'<label class="candidate">.*?<span class="text">(.*?)</span>', page, re.DOTALL)
        ]

    def step_pw_turn(self, aid: int, page: str) -> None:
        from ..protocols import onboarding_content as onb

        stage = self._stage(page)
        if stage == "onboarding":
            steps = [
                self._candidates_shown(block)
                for block in re.findall(r'<fieldset class="onb-step">(.*?)</fieldset>', page, re.DOTALL)
            ]
            data = {}
            for k, options in enumerate(steps):
                good = onb.STEPS[k].candidates[onb.STEPS[k].good]
                right = options.index(good) if good in options else 0
                careful_ok = not self.profile.careless and self.rng.random() > 0.02
                data[f"step{k}"] = str(right if careful_ok else self.rng.randrange(2))
            data["elapsed_ms"] = self.elapsed_ms("onboarding")
            self.act(aid, "onboarding", data)  # a failure that blocks: the next task page is the done page
        elif stage == "waiting":
            self._follow_reply(aid)
        elif stage == "chat":
            self._send(aid, f"a{aid}")
        elif stage == "choose":
            a = self.assignment(aid)
            pending = a.state.get("pending") or {}
            cands = pending.get("candidates") or []
            shown = self._candidates_shown(page)
            if [c["text"].strip() for c in cands] != shown:
                self.log.errors.append(f"assignment {aid}: the candidates shown differ from the stored ones")
            m = re.search(r'name="turn" value="(\d+)"', page)
            question = a.payload.get("question")
            if self.profile.careless:
                choice = self.rng.randrange(2)
            else:
                choice = model.choose_pairwise(
                    self.truth.strength(cands[0]["bot"], question),
                    self.truth.strength(cands[1]["bot"], question),
                    self.profile.side_bias,
                    self.profile.noise,
                    self.rng,
                )
            self.act(
                aid,
                "choose",
                {
                    "elapsed_ms": self.elapsed_ms("pairwise-turn"),
                    "turn": m.group(1) if m else "0",
                    "choice": str(choice),
                    "justification": model.justification(self.rng, self.profile.careless, f"response {choice + 1}"),
                },
            )
        else:
            self.log.errors.append(f"assignment {aid}: unexpected stage {stage!r}")
            self._gone = True

    def step_single_model(self, aid: int, page: str) -> None:
        stage = self._stage(page)
        if stage == "waiting":
            self._follow_reply(aid)
        elif stage == "chat":
            self._send(aid, f"a{aid}")
        elif stage == "check":
            a = self.assignment(aid)
            strength = self.truth.strength(a.payload["bot"], "turn")
            ticked = model.sm_turn_qualities(
                strength, self.profile.lenience, self.profile.noise, self.rng, careless=self.profile.careless
            )
            m = re.search(r'name="turn" value="(\d+)"', page)
            data: dict[str, Any] = {"turn": m.group(1) if m else "0"}
            if ticked:
                data["quality"] = ticked
            else:
                data["none"] = "1"
            data["elapsed_ms"] = self.elapsed_ms("single-model-turn")
            self.act(aid, "rate", data)
        elif stage == "final":
            a = self.assignment(aid)
            strength = self.truth.strength(a.payload["bot"], "dialog")
            data = {}
            for q in ("engaging", "humanlike", "interesting"):
                data[q] = str(
                    self.rng.randint(1, 5)
                    if self.profile.careless
                    else model.likert(strength, self.profile.lenience, self.profile.noise, self.rng)
                )
            data["elapsed_ms"] = self.elapsed_ms("single-model-dialog")
            self.act(aid, "final", data)
        else:
            self.log.errors.append(f"assignment {aid}: unexpected stage {stage!r}")
            self._gone = True

    def step_da(self, aid: int, page: str) -> None:
        stage = self._stage(page)
        position = int(re.search(r"Conversation (\d+) of (\d+)", page).group(1))
        if stage == "topic":
            data = {"opinion": self.rng.choice(("like", "ambivalent", "dislike"))}
            if re.search(r'name="topic"', page):
                data["topic"] = self.rng.choice(TOPICS)
            self.act(aid, "start_chat", data)
        elif stage == "waiting":
            self._follow_reply(aid)
        elif stage == "chat":
            inputs = int(re.search(r"Your messages: (\d+)", page).group(1))
            need = int(re.search(r"at least (\d+) before you can finish", page).group(1))
            if inputs >= need:
                self.act(aid, "end_chat", {})
            else:
                if inputs == need // 2 and self.rng.random() < 0.2:
                    self.act(aid, "topic", {"topic": self.rng.choice(TOPICS)})
                self._send(aid, f"a{aid}-{position}")
        elif stage == "rate":
            a = self.assignment(aid)
            order = list(a.shown_order or a.payload["bots"])
            bot = order[position - 1]
            is_qc = bot == a.payload.get("qc_bot")
            data = model.da_ratings(
                self.truth.strength(bot),
                is_qc,
                careless=self.profile.careless,
                lenience=self.profile.lenience,
                noise=self.profile.noise,
                rng=self.rng,
            )
            self.act(
                aid,
                "rate",
                {
                    **{k: str(v) for k, v in data.items()},
                    "position": str(position),
                    "elapsed_ms": self.elapsed_ms("direct-assessment"),
                },
            )
        else:
            self.log.errors.append(f"assignment {aid}: unexpected stage {stage!r}")
            self._gone = True


def _acute_sides(page: str) -> list[list[str]]:
    """The highlighted speaker's texts on each side of an ACUTE page."""
    sides = []
    for block in re.findall(r'<section class="side"[^>]*>(.*?)</section>', page, re.DOTALL):
        texts = re.findall(r'<li class="msg msg-eval[^"]*">.*?<span class="text">(.*?)</span>', block, re.DOTALL)
        sides.append([html.unescape(t) for t in texts])
    return sides
