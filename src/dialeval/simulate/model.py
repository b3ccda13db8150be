"""The model of a simulated annotator: latent bot quality, noise, biases, carelessness, timing.

Everything here is a pure function of its arguments and a ``random.Random``; the model is written
out (with its default numbers) in docs/simulated-crowd.md.

Latent quality
    Every system has a *strength* on a logit-like scale (:class:`SimTruth`): about +1 for a good
    bot, -1 for a weak one, ``HUMAN_STRENGTH`` (+2) for a person and ``QC_STRENGTH`` (-3) for the
    degraded quality-control bot. Strengths may differ per question (``per_question``).
Annotators (:class:`AnnotatorProfile`)
    ``noise`` is a temperature: pairwise choices follow a logistic model
    P(left) = sigmoid((s_left - s_right) / noise + side_bias); ratings get Gaussian noise of
    that size (in Likert points; x20 on the 0-100 slider). ``side_bias`` > 0 favours the left /
    first option. ``lenience`` shifts every rating (harsh < 0 < lenient). A *careless* annotator
    answers at random, writes short / ALL CAPS / repeated chat messages and gives no real
    justification; the quality control should catch them.
Behaviour
    Seconds per judgment are lognormal around a per-method mean (careless ones are 3x faster);
    ``abandon_p`` is the chance to leave in the middle of a unit (``return_p`` to come back later
    and resume), ``refresh_p`` the chance to reload the page before answering, ``double_submit_p``
    the chance to send a form twice.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..records import DA_CRITERIA, DA_NEGATIVE

HUMAN_STRENGTH = 2.0
QC_STRENGTH = -3.0
DEFAULT_STEP = 0.6  # default strength gap between bots next to each other in study.yaml
TRUTH_FILE = Path("simulation") / "truth.json"

# mean seconds of the steps every method shares; each method adds its own (Method.simulation.seconds)
SECONDS_PER_JUDGMENT: dict[str, float] = {
    "onboarding": 90.0,
    "message": 15.0,
}

CARELESS_STYLES = ("short", "caps", "repeat")
CARELESS_JUSTIFICATIONS = ("no reason", "idk", "ok", "nothing", "none", "n/a")
CARELESS_SHORT = ("ok", "yes", "lol", "no", "cool", "sure", "hm ok", "k")


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


# -- the truth ---------------------------------------------------------------------------------------
@dataclass
class SimTruth:
    """Latent strength per system (and optionally per question); stored as simulation/truth.json."""

    strengths: dict[str, float]
    per_question: dict[str, dict[str, float]] = field(default_factory=dict)
    human: float = HUMAN_STRENGTH
    qc: dict[str, float] = field(default_factory=dict)  # degraded QC bots

    @classmethod
    def from_bots(
        cls,
        bots: Sequence[str],
        strengths: dict[str, float] | None = None,
        qc_bots: Sequence[str] = (),
        step: float = DEFAULT_STEP,
    ) -> SimTruth:
        """Given strengths, else the bots' order: first strongest, `step` apart, centred on 0."""
        names = [b for b in bots if b not in set(qc_bots)]
        if strengths is None:
            n = len(names)
            strengths = {b: round(step * ((n - 1) / 2 - i), 6) for i, b in enumerate(names)}
        else:
            missing = [b for b in names if b not in strengths]
            if missing:
                raise ValueError(f"no simulated strength for bots {missing}")
        return cls(strengths={b: float(strengths[b]) for b in names}, qc={b: QC_STRENGTH for b in qc_bots})

    def strength(self, system: str | None, question: str | None = None) -> float:
        """The latent strength of a bot, 'human', or a QC bot (unknown systems: 0)."""
        if system is None or system == "human":
            return self.human
        if question and system in self.per_question.get(question, {}):
            return self.per_question[question][system]
        if system in self.qc:
            return self.qc[system]
        return self.strengths.get(system, 0.0)

    def order(self) -> list[str]:
        """Bots from strongest to weakest (the order a report should recover)."""
        return sorted(self.strengths, key=lambda b: -self.strengths[b])

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "order": self.order()}

    def save(self, folder: str | Path) -> Path:
        path = Path(folder) / TRUTH_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=2), encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | Path) -> SimTruth:
        data = json.loads((Path(folder) / TRUTH_FILE).read_text(encoding="utf-8"))
        data.pop("order", None)
        return cls(**data)


# -- annotators ---------------------------------------------------------------------------------------
@dataclass
class AnnotatorProfile:
    name: str
    careless: bool = False
    noise: float = 0.6  # temperature of choices; SD of ratings in Likert points
    side_bias: float = 0.0  # logit added in favour of the left/first option
    lenience: float = 0.0  # Likert points added to every rating (slider: x20)
    speed: float = 1.0  # multiplies the seconds per judgment
    careless_style: str = "short"
    abandon_p: float = 0.05
    return_p: float = 0.5
    refresh_p: float = 0.1
    double_submit_p: float = 0.05
    platform: str = "volunteer"  # volunteer | prolific | link
    # honest | spammer (random answers, otherwise careful: real messages and reasons, so the
    # quality control does not catch them) | adversary (always votes for `favourite` when it is
    # one of the two; honest otherwise)
    role: str = "honest"
    favourite: str | None = None

    @property
    def random_answers(self) -> bool:
        """Answers at random: careless or a spammer."""
        return self.careless or self.role == "spammer"


def sample_profile(
    rng: random.Random,
    name: str,
    careless: bool,
    *,
    abandon_p: float = 0.05,
    refresh_p: float = 0.1,
    double_submit_p: float = 0.05,
) -> AnnotatorProfile:
    """A random annotator: noise ~ U(0.3, 0.9), side bias ~ N(0, 0.3), lenience ~ N(0, 0.5), speed
    lognormal with mean 1 (sigma 0.25)."""
    return AnnotatorProfile(
        name=name,
        careless=careless,
        noise=rng.uniform(0.3, 0.9),
        side_bias=rng.gauss(0.0, 0.3),
        lenience=rng.gauss(0.0, 0.5),
        # exp(N(-s²/2, s)) has mean 1, so the crowd's mean time is the documented one (exp(N(0, s))
        # would run 3% slow).
        speed=math.exp(rng.gauss(-0.25 * 0.25 / 2, 0.25)) * (0.33 if careless else 1.0),
        careless_style=rng.choice(CARELESS_STYLES),
        abandon_p=abandon_p,
        refresh_p=refresh_p,
        double_submit_p=double_submit_p,
        platform=rng.choice(("volunteer", "prolific", "link")),
    )


# -- decisions ---------------------------------------------------------------------------------------
def choose_pairwise(strength_a: float, strength_b: float, side_bias: float, noise: float, rng: random.Random) -> int:
    """0 to choose A (shown left / first), 1 for B: P(A) = sigmoid((s_a - s_b) / noise + side_bias)."""
    p_a = sigmoid((strength_a - strength_b) / max(noise, 1e-6) + side_bias)
    return 0 if rng.random() < p_a else 1


def pick_side(
    profile: AnnotatorProfile,
    bot_a: str | None,
    bot_b: str | None,
    strength_a: float,
    strength_b: float,
    rng: random.Random,
) -> int:
    """0 for A (left / first), 1 for B, by the annotator's role: at random (careless, spammer), for
    the adversary's favourite when it is one of the two, else choose_pairwise."""
    if profile.random_answers:
        return rng.randrange(2)
    if profile.role == "adversary" and profile.favourite in (bot_a, bot_b) and bot_a != bot_b:
        return 0 if bot_a == profile.favourite else 1
    return choose_pairwise(strength_a, strength_b, profile.side_bias, profile.noise, rng)


def likert(strength: float, lenience: float, noise: float, rng: random.Random, low: int = 1, high: int = 5) -> int:
    """A 1-5 rating: round(3 + strength + lenience + N(0, noise)), clipped to the scale."""
    mid = (low + high) / 2
    return int(min(high, max(low, round(mid + strength + lenience + rng.gauss(0.0, noise)))))


def slider(strength: float, lenience: float, noise: float, rng: random.Random) -> int:
    """A 0-100 slider position: 50 + 20 * (strength + lenience + N(0, noise)), clipped."""
    return int(min(100, max(0, round(50 + 20 * (strength + lenience + rng.gauss(0.0, noise))))))


def detection_per_exchange(strength: float) -> float:
    """Chance that one exchange gives a bot away: sigmoid(-1.2 * strength - 1)."""
    return sigmoid(-1.2 * strength - 1.0)


def stb_label(is_bot: bool, strength: float, k_exchanges: int, rng: random.Random, *, careless: bool = False) -> str:
    """'human' | 'bot' | 'unsure' for one entity of a segment of `k_exchanges` exchanges.

    A bot is spotted with probability 1 - (1 - h)^k, h = detection_per_exchange(strength): the
    weaker the bot and the longer the segment, the likelier. An unspotted bot is called human
    (60%) or unsure (40%). A person is called human 75%, unsure 17%, bot 8% of the time.
    Careless annotators pick a label at random.
    """
    if careless:
        return rng.choice(("human", "bot", "unsure"))
    if is_bot:
        spotted = 1.0 - (1.0 - detection_per_exchange(strength)) ** max(1, k_exchanges)
        if rng.random() < spotted:
            return "bot"
        return "human" if rng.random() < 0.6 else "unsure"
    u = rng.random()
    return "human" if u < 0.75 else ("unsure" if u < 0.92 else "bot")


def stb_feature(
    strength_0: float,
    strength_1: float,
    noise: float,
    rng: random.Random,
    *,
    careless: bool = False,
    tie_band: float = 0.4,
) -> str:
    """Which entity did better on a feature: '0', '1' or 'tie' (as the form posts it)."""
    if careless:
        return rng.choice(("0", "1", "tie"))
    diff = strength_0 - strength_1 + rng.gauss(0.0, noise)
    if abs(diff) < tie_band:
        return "tie"
    return "0" if diff > 0 else "1"


def da_ratings(
    strength: float,
    is_qc: bool,
    *,
    careless: bool = False,
    lenience: float = 0.0,
    noise: float = 0.6,
    rng: random.Random,
) -> dict[str, int]:
    """The seven raw 0-100 slider positions of a Direct Assessment conversation (records.py).

    Careful annotators rate from the bot's strength (the degraded QC bot has QC_STRENGTH, so it
    gets low scores); the negative statements (robotic, repetitive) are answered reversed, as a
    person agrees that a weak bot is robotic. Careless annotators move sliders at random.
    """
    if careless:
        return {c: rng.randint(0, 100) for c in DA_CRITERIA}
    base = QC_STRENGTH if is_qc and strength > QC_STRENGTH else strength
    out = {}
    for c in DA_CRITERIA:
        v = slider(base, lenience, noise, rng)
        out[c] = 100 - v if c in DA_NEGATIVE else v
    return out


def sm_turn_qualities(
    strength: float, lenience: float, noise: float, rng: random.Random, *, careless: bool = False
) -> list[str]:
    """The SM-Turn qualities ticked for one bot message: each with P = sigmoid(strength + lenience + N)."""
    from ..records import SM_QUALITIES

    if careless:
        return [q for q in SM_QUALITIES if rng.random() < 0.5]
    return [q for q in SM_QUALITIES if rng.random() < sigmoid(1.5 * (strength + lenience) + rng.gauss(0.0, noise))]


def seconds_table() -> dict[str, float]:
    """Mean seconds per step kind (one choice, one segment, one turn rating, one chat message, ...):
    the shared kinds plus every method's own."""
    from ..registry import all_methods

    table = dict(SECONDS_PER_JUDGMENT)
    for method in all_methods().values():
        if method.simulation is not None:
            table.update(method.simulation.seconds)
    return table


def seconds(kind: str, rng: random.Random, speed: float = 1.0, sigma: float = 0.5) -> float:
    """Lognormal seconds per judgment with the kind's mean (seconds_table) times `speed`."""
    mean = seconds_table().get(kind, 30.0) * speed
    mu = math.log(mean) - sigma * sigma / 2
    return float(rng.lognormvariate(mu, sigma))


# -- text ----------------------------------------------------------------------------------------------
def _acceptable(text: str) -> bool:
    from ..quality import filters

    words = text.split()
    if not 4 <= len(words) <= 30:
        return False
    return not filters.check_messages(
        [text], checks=(filters.GREETING_FIRST, filters.ALL_CAPS, filters.OFFENSIVE_LANGUAGE)
    )


def chat_message(
    rng: random.Random,
    corpus: Sequence[Any] | None,
    careless: bool,
    *,
    style: str = "short",
    first: str | None = None,
    used: set[str] | None = None,
) -> str:
    """One message of a simulated annotator in a live chat.

    Careful: a turn of the bundled corpus with 4-30 words, no greeting, no capitals-only text, no
    offensive word and not said before in this conversation (`used`). Careless (`style`):
    'short' (one or two words), 'caps' (a corpus line in CAPITALS) or 'repeat' (the conversation's
    `first` message again) -- what the worker filters of quality/filters.py look for.
    """
    if corpus is None:
        from ..corpus import load_corpus

        corpus = load_corpus()
    if careless:
        if style == "short":
            return rng.choice(CARELESS_SHORT)
        if style == "repeat" and first:
            return first
        text = chat_message(rng, corpus, False, used=used)
        return text.upper() if style == "caps" else text
    used = used if used is not None else set()
    for _ in range(200):
        conv = corpus[rng.randrange(len(corpus))]
        turns: Any = getattr(conv, "turns", conv)  # a corpus conversation or a plain list of lines
        if not turns:
            continue
        text = " ".join(str(turns[rng.randrange(len(turns))]).split())
        if text not in used and _acceptable(text):
            return text
    return f"I was thinking about something else today, message {len(used) + 1}."


def justification(rng: random.Random, careless: bool, chosen: str = "the first", *, words: int = 2) -> str:
    """A reason for a choice: varied sentences for careful annotators, a non-answer for careless ones."""
    if careless:
        return "no reason"
    reasons = (
        "sounds more natural",
        "answers what was said",
        "is more engaging",
        "asks a good question",
        "stays on topic",
        "is more specific",
        "is less repetitive",
        "feels like a real person",
        "gives more detail",
        "is friendlier",
    )
    return f"{chosen.capitalize()} {rng.choice(reasons)} and {rng.choice(reasons)}"
