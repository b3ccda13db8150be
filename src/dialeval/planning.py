"""Study planning: judgments and annotator-hours needed before a study is run.

`plan_study(method, expectations)` answers "how many judgments (and hours) until the expected
differences are significant with probability `power`?" per bot pair — closed form where one exists,
checked by simulation — and, for more than two bots, "until the whole ranking is correct and
decided" (simulation), plus the anytime-valid adaptive alternative (`dialeval.scheduling.state`). Curves of
n against the probability of significance are returned like Figs. 7–9 of Smith et al. (2022) (there against
hours; `hours` is in every point).

Models per method (what "significant" means):

- ``acute`` (PW-Dialog) and ``pairwise-turn``: two-sided exact binomial test of the win rate
  against 50% (Smith et al. 2022, Appendix F). Power is exact (sum of Binomial(n, w) over the rejection region).
- ``single-model`` (SM-Dialog Likert): two-sided pooled t-test between two bots' per-conversation
  scores (Smith et al. 2022, Appendix F). A win rate w is read as the probability that one conversation of a is
  scored above one of b ("probability of superiority", McGraw & Wong 1992); for normal scores
  Cohen's d = sqrt(2)·Φ⁻¹(w), i.e. a Likert mean difference of d·sd (sd default 1.0; Smith et al. 2022, Table 2
  reports SDs of 0.8–1.3). Power from the noncentral t. n is conversations per bot; a pair costs 2n.
- ``spot-the-bot``: the win rate of Deriu et al. (2020) (draws excluded) tested like a binomial proportion
  (Deriu et al. use a chi-square test on the same counts; the binomial test is the planning model).
  A share `draw_share` of annotations is a draw and carries no information (default 0: set it from
  a pilot). n counts segment annotations.
- ``direct-assessment``: one-sided Mann–Whitney test (Ji et al. 2022) between per-conversation mean z scores,
  planned as a one-sided t-test with d = sqrt(2)·Φ⁻¹(w) and n inflated by π/3 (the Mann–Whitney
  test's asymptotic relative efficiency of 3/π under normality); the simulation runs the real
  Mann–Whitney test. n is conversations per bot.

Default seconds per judgment (each method's `PlanningModel`, also `DEFAULT_SECONDS`; override with
`seconds_per_judgment`):
Appendix F of Smith et al. (2022) does not list them, but §4.1 gives the worker-hours and ratings collected per
technique, from which: PW-Dialog 6.03 h / 324 ratings = 67 s; PW-Turn 5.73 h / 231 ratings = 89 s;
SM-Turn+SM-Dialog 4.39 h per model / 68 conversations = 232 s per conversation. Spot The Bot: about
25 s per annotation (Deriu et al. 2020, §"Time efficiency", PersonaChat and DailyDialog). Direct
assessment: 6.68 min per conversation (Ji et al. 2022, Table 1, Free run 1, all workers). Onboarding
time is included as Smith et al. (2022) do, but none of the papers states it: the default is 0 s.

Example (what `dialeval plan acute "bot-a>bot-b:0.60"` does)::

    from dialeval.planning import parse_expectation, plan_study
    plan = plan_study("acute", dict([parse_expectation("bot-a>bot-b:0.60")]))
    plan["pairs"][0]["n_needed"], plan["pairs"][0]["hours_needed"]     # (199, 3.70...)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats as sps

from .errors import DialevalError
from .registry import PilotReading, PlanningModel, load_part
from .stats import power as pw
from .stats.bradley_terry import fit_bt
from .stats.sequential import DEFAULT_PRIOR, bonferroni_alpha, crossing_probability, decision_bounds

__all__ = [
    "DEFAULT_ONBOARDING_SECONDS",
    "PlanningError",
    "normal_expectation",
    "parse_expectation",
    "parse_expectations",
    "plan_from_pilot",
    "plan_study",
    "plannable_methods",
    "planning_model",
]

DEFAULT_ONBOARDING_SECONDS = 0.0
_ARE_MW = 3.0 / math.pi

_EXPECT = re.compile(r"^\s*([A-Za-z0-9_.+\-]+?)\s*>\s*([A-Za-z0-9_.+\-]+?)\s*:\s*([0-9]*\.?[0-9]+)\s*(%?)\s*$")


class PlanningError(DialevalError, ValueError):
    """A planning input the user can fix (the message says how)."""


def plannable_methods() -> tuple[str, ...]:
    """The methods `plan` sizes: those with a planning model (Method.planning)."""
    from .registry import all_methods

    return tuple(m.id for m in all_methods().values() if m.planning is not None)


def planning_model(method: str) -> PlanningModel:
    """The method's planning model (test, seconds per judgment); PlanningError when it has none."""
    from .registry import all_methods

    spec = all_methods().get(method)
    if spec is None or spec.planning is None:
        raise PlanningError(f"unknown method {method!r}; plan one of: {', '.join(plannable_methods())}")
    return spec.planning


def normal_expectation(diff: float, sd: float) -> float:
    """P(better rated above worse) for a mean difference `diff` of ratings with this SD."""
    return float(np.clip(sps.norm.cdf(abs(diff) / (sd * math.sqrt(2))), 0.5 + 1e-6, 1 - 1e-6))


def __getattr__(name: str) -> Any:
    # METHODS and DEFAULT_SECONDS (method -> seconds per judgment), read from the method registry
    if name == "METHODS":
        return plannable_methods()
    if name == "DEFAULT_SECONDS":
        return {m: planning_model(m).seconds_per_judgment for m in plannable_methods()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_expectation(text: str) -> tuple[tuple[str, str], float]:
    """'bot-a>bot-b:0.60' (or ':60%') -> (('bot-a', 'bot-b'), 0.60): bot-a is expected to win 60% of
    the judgments against bot-b. Raises PlanningError with the accepted form on bad input.

    >>> parse_expectation("bot-a>bot-b:0.60")
    (('bot-a', 'bot-b'), 0.6)
    """
    if not isinstance(text, str):
        raise PlanningError(f"an expectation is a string like 'bot-a>bot-b:0.60', not {type(text).__name__}")
    m = _EXPECT.match(text)
    if not m:
        raise PlanningError(
            f"cannot read the expectation {text!r}: write WINNER>LOSER:RATE, e.g. 'bot-a>bot-b:0.60' "
            "(bot-a expected to win 60% of judgments against bot-b; bot names use letters, digits, _ . + -)"
        )
    a, b, value, pct = m.groups()
    rate = float(value) / (100.0 if pct else 1.0)
    if not pct and rate > 1.0:
        raise PlanningError(f"{text!r}: a rate above 1 — write 0.60 or 60% for sixty percent")
    if a == b:
        raise PlanningError(f"{text!r}: a bot cannot be compared with itself")
    if not 0.0 < rate < 1.0:
        raise PlanningError(f"{text!r}: the expected win rate must be strictly between 0 and 1")
    return (a, b), rate


def parse_expectations(texts: Sequence[str]) -> dict[tuple[str, str], float]:
    """Several expectations; the same pair twice (in either direction) is an error."""
    out: dict[tuple[str, str], float] = {}
    for t in texts:
        (a, b), r = parse_expectation(t)
        if (a, b) in out or (b, a) in out:
            raise PlanningError(f"the pair {a}/{b} is given twice")
        out[(a, b)] = r
    return out


def _normalise(expectations: Mapping | Sequence[str] | str) -> dict[tuple[str, str], float]:
    if isinstance(expectations, str):
        return parse_expectations([expectations])
    if not isinstance(expectations, Mapping):
        return parse_expectations(list(expectations))
    out = {}
    for key, rate in expectations.items():
        if isinstance(key, str):
            (a, b), r2 = parse_expectation(f"{key}:{rate}") if ":" not in key else parse_expectation(key)
            out[(a, b)] = r2
            continue
        a, b = key
        rate = float(rate)
        if not 0.0 < rate < 1.0:
            raise PlanningError(f"expected win rate of {a} over {b} must be strictly between 0 and 1, got {rate}")
        if a == b:
            raise PlanningError(f"{a} cannot be compared with itself")
        out[(str(a), str(b))] = rate
    if not out:
        raise PlanningError("give at least one expectation, e.g. 'bot-a>bot-b:0.60'")
    return out


def _d_from_rate(rate: float) -> float:
    return math.sqrt(2.0) * float(sps.norm.ppf(rate))


def _grid(n_need: int | None, n_max: int) -> np.ndarray:
    top = min(n_max, max(20, 3 * n_need)) if n_need else n_max
    g = np.geomspace(2, top, 40)
    if n_need:  # finer around the answer, so the simulated n is not a coarse grid step away
        g = np.concatenate([g, n_need * np.linspace(0.8, 1.25, 19)])
    return np.unique(np.clip(np.round(g), 2, n_max).astype(int))


def _first(ns: np.ndarray, pw_: np.ndarray, target: float) -> int | None:
    ok = np.flatnonzero(pw_ >= target)
    return int(ns[ok[0]]) if ok.size else None


def _first_exact_binomial(rate: float, target: float, alpha: float, n_max: int) -> int | None:
    """First n whose exact binomial-test power reaches `target` (every n tried, as stats.power does;
    the power of the discrete test is not monotone in n, so a slightly larger n can dip just below
    again: see :func:`dialeval.stats.power.smallest_n`)."""
    return pw.smallest_n(lambda n: pw.binomial_power(rate, n, alpha), target, n_max)[0]


def _pair_binomial(
    rate: float, power: float, alpha: float, draw: float, n_max: int, n_sim: int, rng: np.random.Generator
) -> dict:
    n_dec = _first_exact_binomial(rate, power, alpha, n_max)
    n_need = None if n_dec is None else math.ceil(n_dec / (1.0 - draw))
    ns = _grid(n_need, n_max)
    dec = np.maximum(np.round(ns * (1.0 - draw)).astype(int), 0)
    closed = pw.binomial_power(rate, dec, alpha)
    sim = np.empty(ns.size)
    for k, (n, _nd) in enumerate(zip(ns, dec)):
        decisive = rng.binomial(int(n), 1.0 - draw, size=n_sim)
        wins = rng.binomial(decisive, rate)
        c = pw.binomial_rejection_bound(decisive, alpha)
        sim[k] = float(((c >= 0) & ((wins <= c) | (wins >= decisive - c))).mean())
    return {
        "test": "two-sided exact binomial",
        "effect": {"win_rate": rate, "draw_share": draw},
        "n_needed": n_need,
        "n_needed_sim": _first(ns, sim, power),
        "ns": ns,
        "power": closed,
        "power_sim": sim,
    }


def _pair_ttest(
    rate: float, power: float, alpha: float, n_max: int, n_sim: int, rng: np.random.Generator, sd: float
) -> dict:
    d = _d_from_rate(rate)
    n_need = pw.smallest_n(lambda n: pw.ttest_power(d, n, alpha), power, n_max, n_min=2)[0]
    ns = _grid(n_need, n_max)
    closed = pw.ttest_power(d, ns, alpha)
    sim = np.empty(ns.size)
    for k, n in enumerate(ns):
        n = int(n)
        if n < 2:
            sim[k] = 0.0
            continue
        ma = rng.normal(d, 1 / math.sqrt(n), n_sim)
        mb = rng.normal(0.0, 1 / math.sqrt(n), n_sim)
        va = rng.chisquare(n - 1, n_sim) / (n - 1)
        vb = rng.chisquare(n - 1, n_sim) / (n - 1)
        t = (ma - mb) / np.sqrt((va + vb) / 2 * 2 / n)
        sim[k] = float((2 * sps.t.sf(np.abs(t), 2 * n - 2) < alpha).mean())
    return {
        "test": "two-sided pooled t-test (normal scores)",
        "effect": {"win_rate": rate, "cohens_d": d, "likert_difference": d * sd, "sd": sd},
        "n_needed": n_need,
        "n_needed_sim": _first(ns, sim, power),
        "ns": ns,
        "power": closed,
        "power_sim": sim,
    }


def _pair_mannwhitney(
    rate: float, power: float, alpha: float, n_max: int, n_sim: int, rng: np.random.Generator, sd: float
) -> dict:
    d = _d_from_rate(rate)
    # one-sided t-test at alpha == two-sided at 2 alpha (for the right direction); n inflated by 1/ARE
    t_need = pw.smallest_n(lambda n: pw.ttest_power(d, n, 2 * alpha), power, n_max, n_min=2)[0]
    n_need = None if t_need is None else math.ceil(t_need / _ARE_MW)
    ns = _grid(n_need, n_max)
    closed = pw.ttest_power(d, np.maximum(np.round(ns * _ARE_MW).astype(int), 2), 2 * alpha)
    sim = np.empty(ns.size)
    sims = min(n_sim, 400)
    for k, n in enumerate(ns):
        n = int(n)
        x = rng.normal(d, 1.0, (sims, n))
        y = rng.normal(0.0, 1.0, (sims, n))
        p = sps.mannwhitneyu(x, y, alternative="greater", axis=1).pvalue
        sim[k] = float((p < alpha).mean())
    return {
        "test": "one-sided Mann-Whitney U (planned as t-test / ARE 3/pi)",
        "effect": {"win_rate": rate, "cohens_d": d, "z_difference": d * sd, "sd": sd},
        "n_needed": n_need,
        "n_needed_sim": _first(ns, sim, power),
        "ns": ns,
        "power": closed,
        "power_sim": sim,
    }


def _hours(n, seconds: float, onboarding: float, per_annotator: float) -> float | None:
    if n is None:
        return None
    return float(pw.annotator_hours(n, seconds, onboarding, per_annotator))


def _sequential(rate: float, alpha: float, draw: float, n_cap: int) -> dict:
    """Exact expected judgments of the anytime-valid test (two bots) and P(decided by the cap)."""
    lo, hi = decision_bounds(n_cap, alpha, DEFAULT_PRIOR)
    r = crossing_probability(rate, lo, hi)
    cdf = np.cumsum(r["stop_pmf"])
    return {
        "expected_judgments": r["expected_n"] / (1.0 - draw),
        "p_decided_by_cap": r["any"],
        "p_wrong_direction": r["lower"] if rate > 0.5 else r["upper"],
        "cap": int(n_cap / (1.0 - draw)),
        "median_judgments": (int(np.searchsorted(cdf, 0.5)) / (1.0 - draw)) if cdf[-1] >= 0.5 else None,
    }


def _strengths(bots: list[str], expectations: Mapping[tuple[str, str], float], method: str) -> np.ndarray:
    """Bradley–Terry strengths (binomial methods) or normal means in SD units (t-test methods)
    that fit the given pairwise expectations; pairs not given are filled in by the model."""
    idx = {b: i for i, b in enumerate(bots)}
    K = len(bots)
    if planning_model(method).test == "binomial":
        W = np.zeros((K, K))
        for (a, b), r in expectations.items():
            W[idx[a], idx[b]] += 100 * r
            W[idx[b], idx[a]] += 100 * (1 - r)
        return fit_bt(W, l2=1e-9)
    rows, rhs = [], []
    for (a, b), r in expectations.items():
        row = np.zeros(K)
        row[idx[a]], row[idx[b]] = 1, -1
        rows.append(row)
        rhs.append(_d_from_rate(r))
    rows.append(np.ones(K))
    rhs.append(0.0)
    mu, *_ = np.linalg.lstsq(np.array(rows), np.array(rhs), rcond=None)
    return mu


def _connected(bots: list[str], pairs) -> bool:
    seen, stack = {bots[0]}, [bots[0]]
    adj: dict[str, set[str]] = {b: set() for b in bots}
    for a, b in pairs:
        adj[a].add(b)
        adj[b].add(a)
    while stack:
        for nb in adj[stack.pop()] - seen:
            seen.add(nb)
            stack.append(nb)
    return len(seen) == len(bots)


def _ranking_ttest_accuracy(
    mu: np.ndarray, n: int, alpha: float, reps: int, rng: np.random.Generator, one_sided_are: bool
) -> float:
    """Share of simulated studies (n conversations per bot, all pairs t-tested at alpha/m, decisions
    closed under transitivity) giving the correct complete ranking."""
    K = len(mu)
    m = K * (K - 1) // 2
    level = bonferroni_alpha(alpha, m)
    n_eff = max(2, round(n * _ARE_MW)) if one_sided_are else n
    means = rng.normal(mu[None, :], 1 / math.sqrt(n_eff), (reps, K))
    var = rng.chisquare(n_eff - 1, (reps, K)) / (n_eff - 1)
    t = (means[:, :, None] - means[:, None, :]) / np.sqrt((var[:, :, None] + var[:, None, :]) / n_eff)
    p = 2 * sps.t.sf(np.abs(t), 2 * n_eff - 2)
    beats = (p < level) & (t > 0)
    closure = beats.copy()
    for k in range(K):
        closure |= closure[:, :, [k]] & closure[:, [k], :]
    iu = np.triu_indices(K, 1)
    resolved = (closure | np.transpose(closure, (0, 2, 1)))[:, iu[0], iu[1]].all(axis=1)
    truth = mu[:, None] > mu[None, :]
    wrong = (beats & ~truth[None]).any(axis=(1, 2))
    return float((resolved & ~wrong).mean())


def _ranking(
    method: str,
    bots: list[str],
    expectations,
    power: float,
    alpha: float,
    seconds: float,
    onboarding: float,
    per_annotator: float,
    draw: float,
    n_max: int,
    reps: int,
    seed: int,
    adaptive: bool,
) -> dict:
    from .stats import study_design as design
    from .stats.study_design import Scenario, bt_probabilities

    theta = _strengths(bots, expectations, method)
    order = [bots[i] for i in np.argsort(-theta, kind="stable")]
    K = len(bots)
    m = K * (K - 1) // 2
    grid = np.unique(np.round(np.geomspace(4, n_max, 36)).astype(int))
    binomial = planning_model(method).test == "binomial"
    if binomial:
        scen = Scenario(name="plan", bots=bots, probs=bt_probabilities(theta))
        acc = design.uniform_accuracy_curve(scen, grid, alpha, reps, seed)
        n_dec = design.matched_uniform_n(grid, acc, power)
        n_pair = None if n_dec is None else math.ceil(n_dec / (1.0 - draw))
        total = None if n_pair is None else m * n_pair
        unit = "judgments per pair"
    else:
        rng = np.random.default_rng(seed)
        mann_whitney = planning_model(method).test == "mannwhitney"
        acc = np.maximum.accumulate(
            np.array([_ranking_ttest_accuracy(theta, int(n), alpha, reps, rng, mann_whitney) for n in grid])
        )
        n_pair = design.matched_uniform_n(grid, acc, power)
        n_pair = None if n_pair is None else math.ceil(n_pair)
        total = None if n_pair is None else K * n_pair
        unit = "conversations per bot"
    out: dict[str, Any] = {
        "bots_best_first": order,
        "model": (
            "Bradley-Terry strengths fitted to the expectations"
            if binomial
            else "normal means (SD units) fitted to the expectations by least squares"
        ),
        "design": f"uniform: the same number of {unit}, every pair tested at alpha/{m} (Bonferroni), "
        "decisions closed under transitivity",
        "n_needed": n_pair,
        "unit": unit,
        "judgments_needed": total,
        "hours_needed": _hours(total, seconds, onboarding, per_annotator),
        "curve": [{"n": int(n), "p_correct_ranking": float(a)} for n, a in zip(grid, acc)],
        "simulations_per_point": reps,
    }
    if adaptive and binomial:
        cap = int(min(20 * (total or n_max * m), 2_000_000))
        sim = design.simulate_adaptive(scen, max(10, reps // 40), seed, "rank-overlap", alpha, DEFAULT_PRIOR, cap)
        mean_j = float(sim["judgments"].mean()) / (1.0 - draw)
        out["adaptive"] = {
            "rule": "rank-overlap selection + anytime-valid stopping (dialeval.scheduling)",
            "expected_judgments": mean_j,
            "p_correct_ranking": float(sim["correct"].mean()),
            "studies": int(sim["judgments"].size),
            "expected_hours": _hours(mean_j, seconds, onboarding, per_annotator),
        }
    return out


def plan_study(
    method: str,
    expectations: Mapping[tuple[str, str], float] | Sequence[str] | str,
    seconds_per_judgment: float | None = None,
    onboarding_seconds: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    judgments_per_annotator: float = 1.0,
    sd: float = 1.0,
    draw_share: float = 0.0,
    n_max: int = 100_000,
    n_sim: int = 1000,
    seed: int = 0,
    ranking: bool = True,
    adaptive: bool = True,
) -> dict[str, Any]:
    """Plan a study. `expectations` maps (winner, loser) to the expected win rate (or is a list of
    'bot-a>bot-b:0.60' strings). Returns a JSON-ready dict:

    {method, model, alpha, power, seconds_per_judgment, onboarding_seconds, seconds_source,
     pairs: [{a, b, win_rate, test, effect, n_needed (closed form), n_needed_sim, judgments_needed,
              hours_needed, hours_needed_sim, sequential (anytime-valid test: expected judgments),
              curve: [{n, power, power_sim, hours}]}],
     ranking: {...} (more than two bots: n for a correct, decided ranking by simulation; adaptive
              expected judgments for pairwise methods), total_judgments, total_hours}

    n counts judgments per pair for pairwise methods and Spot The Bot, conversations per bot for
    single-model and direct assessment (a pair then costs 2n judgments).
    """
    model = planning_model(method)
    binomial = model.test == "binomial"
    draws = draw_share if model.draws else 0.0  # only methods with draws (Spot The Bot) lose judgments to them
    if not 0 < power < 1:
        raise PlanningError(f"power must be between 0 and 1, got {power}")
    if not 0 < alpha < 0.5:
        raise PlanningError(f"alpha must be between 0 and 0.5, got {alpha}")
    if not 0 <= draw_share < 1:
        raise PlanningError(f"draw_share must be in [0, 1), got {draw_share}")
    exp = _normalise(expectations)
    seconds = float(seconds_per_judgment) if seconds_per_judgment is not None else model.seconds_per_judgment
    onboarding = float(onboarding_seconds) if onboarding_seconds is not None else DEFAULT_ONBOARDING_SECONDS
    rng = np.random.default_rng(seed)
    per_pair_cost = 1 if binomial else 2
    pairs = []
    for (a, b), rate in exp.items():
        if binomial:
            r = _pair_binomial(rate, power, alpha, draws, n_max, n_sim, rng)
        elif model.test == "ttest":
            r = _pair_ttest(rate, power, alpha, min(n_max, 20_000), n_sim, rng, sd)
        else:
            r = _pair_mannwhitney(rate, power, alpha, min(n_max, 20_000), n_sim, rng, sd)
        ns, closed, sim = r.pop("ns"), r.pop("power"), r.pop("power_sim")
        hours = pw.annotator_hours(per_pair_cost * ns, seconds, onboarding, judgments_per_annotator)
        judg = None if r["n_needed"] is None else per_pair_cost * r["n_needed"]
        judg_sim = None if r["n_needed_sim"] is None else per_pair_cost * r["n_needed_sim"]
        row = {
            "a": a,
            "b": b,
            "win_rate": rate,
            **r,
            "judgments_needed": judg,
            "hours_needed": _hours(judg, seconds, onboarding, judgments_per_annotator),
            "hours_needed_sim": _hours(judg_sim, seconds, onboarding, judgments_per_annotator),
            "curve": [
                {"n": int(n), "power": float(c), "power_sim": float(s), "hours": float(h)}
                for n, c, s, h in zip(ns, closed, sim, hours)
            ],
        }
        if binomial and abs(rate - 0.5) >= 0.02:
            d = draws
            cap = int(min(max(4 * (r["n_needed"] or 1000), 2000), 20_000) * (1 - d))
            row["sequential"] = _sequential(rate, alpha, d, cap)
        pairs.append(row)
    out: dict[str, Any] = {
        "method": method,
        "model": pairs[0]["test"],
        "alpha": alpha,
        "power": power,
        "seconds_per_judgment": seconds,
        "onboarding_seconds": onboarding,
        "judgments_per_annotator": judgments_per_annotator,
        "seconds_source": (
            "given"
            if seconds_per_judgment is not None
            else f"default ({model.source or 'the method'}; Method.planning)"
        ),
        "pairs": pairs,
    }
    bots = list(dict.fromkeys([x for pair in exp for x in pair]))
    if per_pair_cost == 1:
        total = sum(p["judgments_needed"] for p in pairs) if all(p["judgments_needed"] for p in pairs) else None
    else:  # each bot's conversations serve all its comparisons
        need = {b: max((p["n_needed"] or 0) for p in pairs if b in (p["a"], p["b"])) for b in bots}
        total = sum(need.values()) if all(p["n_needed"] for p in pairs) else None
    out["total_judgments"] = total
    out["total_hours"] = _hours(total, seconds, onboarding, judgments_per_annotator)
    if ranking and len(bots) > 2:
        if not _connected(bots, exp):
            out["ranking"] = {"error": "the expectations do not connect all bots; add a comparison linking each group"}
        else:
            out["ranking"] = _ranking(
                method,
                bots,
                exp,
                power,
                alpha,
                seconds,
                onboarding,
                judgments_per_annotator,
                draws,
                n_max if binomial else min(n_max, 20_000),
                max(200, n_sim // 2),
                seed,
                adaptive,
            )
    return out


def plan_from_pilot(report: Mapping[str, Any], power: float = 0.8, alpha: float = 0.05, **options: Any) -> dict:
    """Plan the full study from a pilot's report (the dict `dialeval report --json` writes).

    What a report says is read by the method's own reader, `PlanningModel.pilot` (the pairwise
    methods share `pairwise_pilot`: observed win rates; single-model reads the SM-Dialog Likert means
    and SDs, direct assessment the overall z and minutes per conversation); then the observed
    onboarding seconds. Extra options go to `plan_study`.
    """
    if not isinstance(report, Mapping) or "method" not in report:
        raise PlanningError("a pilot report is the JSON dict of `dialeval report --json` (it has a 'method' key)")
    method = report["method"]
    if method not in plannable_methods():
        raise PlanningError(
            f"the pilot report's method {method!r} cannot be planned (plan one of {', '.join(plannable_methods())})"
        )
    model = planning_model(method)
    if model.pilot is None:
        raise PlanningError(f"method {method!r} is not planned from a pilot report (give expectations instead)")
    sd = options.pop("sd", None)
    reading: PilotReading = load_part(model.pilot)(report, sd)
    exp = reading.expectations
    sd = reading.sd if sd is None else sd
    if model.draws and "draw_share" not in options and reading.draw_share is not None:
        options["draw_share"] = reading.draw_share
    if not exp:
        raise PlanningError(f"the pilot report ({method}) has no usable comparisons (no win rates or scores per bot)")
    seconds = options.pop("seconds_per_judgment", None)
    if seconds is None:
        seconds = reading.seconds_per_judgment
    onboarding = options.pop("onboarding_seconds", report.get("onboarding_seconds"))
    plan = plan_study(
        method,
        exp,
        seconds_per_judgment=seconds,
        onboarding_seconds=onboarding,
        power=power,
        alpha=alpha,
        sd=sd if sd is not None else 1.0,
        **options,
    )
    plan["from_pilot"] = {
        "expectations": [f"{a}>{b}:{r:.3f}" for (a, b), r in exp.items()],
        "seconds_from_pilot": seconds is not None,
    }
    return plan
