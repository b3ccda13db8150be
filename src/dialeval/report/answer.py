"""The answer of a report in words, written from its statistics: who is preferred, how sure, what is
undecided and about how many more judgments would give 80% power.

`answer(report)` returns {"summary": [sentences], "pairs": [...], "limits": paragraph}; build.py
stores it in report.json under `answer`, so every number of the text is also a number of the JSON.
"""

from __future__ import annotations

import math
from typing import Any

ALPHA = 0.05
POWER = 0.8
MAX_LISTED_UNDECIDED = 6

LIMITS = {
    "acute": "Limits: ACUTE-Eval judges whole conversations, so a win says which conversations read better, "
    "not which turn made the difference; self-chats show how a bot talks to itself, not to people. "
    "The p-values are per pair (two-sided binomial) and not corrected for the number of pairs; "
    "the answer depends on the question's wording.",
    "pairwise-turn": "Limits: PW-Turn compares the two bots' replies to the same history, which the chosen "
    "replies shape, so later turns are not independent; win rates are over bot turns "
    "(here the report's turn range), p-values per pair (two-sided binomial), not corrected "
    "for the number of pairs.",
    "single-model": "Limits: SM-Turn and SM-Dialog rate one bot at a time, so differences between bots rest "
    "on different annotators and conversations; Likert ratings are treated as interval data "
    "(t-tests), and the p-values are not corrected for the number of pairs and metrics.",
    "spot-the-bot": "Limits: Spot The Bot ranks bots by how long they pass as human in bot–bot "
    "conversations, which is not the same as being a good partner; the win rates use the "
    "paper's chi-square tests per pair, not corrected for the number of pairs; rank ranges "
    "come from a bootstrap over conversations.",
    "direct-assessment": "Limits: Direct Assessment scores are standardised per annotator (z), so they rank "
    "systems within this study and are not comparable across studies; annotators who did "
    "not rate the degraded bot lower are removed before scoring; the pairwise tests are "
    "one-sided Mann-Whitney tests, not corrected for the number of pairs.",
}


def _p(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "p not available"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _pct(rate: float) -> str:
    return f"{rate:.0%}"


def _binomial_n_needed(rate: float | None, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Judgments for a two-sided binomial test at the observed win rate to reach `power` (normal
    approximation; None when no difference was observed)."""
    if rate is None or not 0 < rate < 1 or abs(rate - 0.5) < 1e-9:
        return None
    from scipy.stats import norm

    z_a, z_b = norm.ppf(1 - alpha / 2), norm.ppf(power)
    n = ((z_a * 0.5 + z_b * math.sqrt(rate * (1 - rate))) / (rate - 0.5)) ** 2
    return int(math.ceil(n))


def _tts_lookup(report: dict[str, Any], a: str, b: str, metric: str | None = None) -> dict | None:
    for entry in report.get("time_to_significance") or []:
        if not isinstance(entry, dict) or {entry.get("a"), entry.get("b")} != {a, b}:
            continue
        if metric is not None and entry.get("metric") not in (None, metric):
            continue
        return entry
    return None


def _needed_total(entry: dict | None, per_group: bool = False) -> int | None:
    """Total judgments of a pair for 80% power from the report's own time_to_significance entry;
    `per_group`: its n_needed counts one system's side (t-tests, Mann-Whitney), so both sides double it."""
    if not entry:
        return None
    for key in ("n_needed", "n_needed_sim", "n_needed_approx"):
        value = entry.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(value) * (2 if per_group else 1)
    return None


def _pair(
    a: str,
    b: str,
    effect: str,
    p: float | None,
    n: int,
    needed: int | None,
    unit: str = "judgments",
    decided_by: str = "p",
    no_difference: bool = False,
) -> dict[str, Any]:
    decided = p is not None and not (isinstance(p, float) and math.isnan(p)) and p < ALPHA
    more = None if decided or needed is None else max(int(needed) - int(n), 0)
    return {
        "winner": a,
        "loser": b,
        "effect": effect,
        "p": p,
        "n": n,
        "unit": unit,
        "decided": decided,
        "more_for_80_power": more,
        "decided_by": decided_by,
        "no_difference": no_difference,
    }


def _pairwise_pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """acute and pairwise-turn: matchups {a, b, wins_a, wins_b, n, win_rate_a, p}."""
    out = []
    for m in report.get("matchups") or []:
        rate, n = m.get("win_rate_a"), int(m.get("n") or 0)
        if rate is None or not n:
            continue
        a, b = (m["a"], m["b"]) if rate >= 0.5 else (m["b"], m["a"])
        share = rate if rate >= 0.5 else 1 - rate
        needed = _needed_total(_tts_lookup(report, m["a"], m["b"])) or _binomial_n_needed(share)
        out.append(_pair(a, b, f"{_pct(share)}", m.get("p"), n, needed, no_difference=abs(share - 0.5) < 1e-9))
    return out


def _stb_pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for w in report.get("win_rates") or []:
        rate = w.get("win_rate")
        n = int((w.get("wins") or 0) + (w.get("losses") or 0))
        if rate is None or not n:
            continue
        a, b = (w["a"], w["b"]) if rate >= 0.5 else (w["b"], w["a"])
        if any(p["winner"] == b and p["loser"] == a or p["winner"] == a and p["loser"] == b for p in out):
            continue  # the grid lists each pair both ways
        share = rate if rate >= 0.5 else 1 - rate
        needed = _needed_total(_tts_lookup(report, w["a"], w["b"])) or _binomial_n_needed(share)
        out.append(
            _pair(
                a,
                b,
                f"{_pct(share)} of decided comparisons",
                w.get("p"),
                n,
                needed,
                unit="comparisons",
                no_difference=abs(share - 0.5) < 1e-9,
            )
        )
    return out


def _sm_pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for t in report.get("ttests") or []:
        if t.get("metric") != "likert_mean":
            continue
        ma, mb = t.get("mean_a"), t.get("mean_b")
        if ma is None or mb is None:
            continue
        a, b, xa, xb = (t["a"], t["b"], ma, mb) if ma >= mb else (t["b"], t["a"], mb, ma)
        n = int((t.get("n_a") or 0) + (t.get("n_b") or 0))
        needed = _needed_total(_tts_lookup(report, t["a"], t["b"], "sm_dialog"), per_group=True)
        out.append(
            _pair(
                a,
                b,
                f"mean SM-Dialog rating {xa:.2f} vs {xb:.2f}",
                t.get("p"),
                n,
                needed,
                unit="conversations",
                no_difference=xa == xb,
            )
        )
    return out


def _da_pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """direct-assessment: `pairwise` holds a one-sided test for every ordered pair (a's z > b's); the
    answer uses the test in the direction of the observed difference."""
    z = {s["name"]: s.get("score") for s in report.get("systems") or []}
    n = {s["name"]: int(s.get("n") or 0) for s in report.get("systems") or []}
    out = []
    for row in report.get("pairwise") or []:
        a, b = row.get("a"), row.get("b")
        if z.get(a) is None or z.get(b) is None or z[a] < z[b] or (z[a] == z[b] and a > b):
            continue
        needed = _needed_total(_tts_lookup(report, a, b), per_group=True)
        out.append(
            _pair(
                a,
                b,
                f"overall z {z[a]:.2f} vs {z[b]:.2f}",
                row.get("p"),
                n[a] + n[b],
                needed,
                unit="rated conversations",
                no_difference=z[a] == z[b],
            )
        )
    return out


PAIRS = {
    "acute": _pairwise_pairs,
    "pairwise-turn": _pairwise_pairs,
    "spot-the-bot": _stb_pairs,
    "single-model": _sm_pairs,
    "direct-assessment": _da_pairs,
}


def _list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def answer(report: dict[str, Any]) -> dict[str, Any]:
    """The report's first section: sentences generated from its statistics (see module docstring)."""
    method = report.get("method", "")
    systems = [s for s in report.get("systems") or [] if isinstance(s, dict) and s.get("name")]
    pairs = PAIRS.get(method, lambda r: [])(report)
    summary: list[str] = []
    if not systems:
        return {
            "summary": ["No judgments yet: there is nothing to conclude."],
            "pairs": [],
            "limits": LIMITS.get(method, ""),
        }
    order = [s["name"] for s in systems]
    best = order[0]
    beaten_by_best = {p["loser"] for p in pairs if p["decided"] and p["winner"] == best}
    others = set(order[1:])
    if len(order) == 1:
        summary.append(f"Only {best} has judgments; there is nothing to compare it with.")
    elif len(order) == 2 and pairs:
        pass  # the one pair's sentence below says it all
    elif others and others <= beaten_by_best:
        summary.append(f"{best} is preferred to every other system, each difference significant at p < {ALPHA}.")
    elif beaten_by_best:
        summary.append(
            f"{best} ranks first; it is significantly preferred to {_list(sorted(beaten_by_best))}, "
            "not (yet) to the others."
        )
    else:
        summary.append(
            f"{best} ranks first, but no difference between it and the others is significant yet (p < {ALPHA})."
        )
    by_winner: dict[str, list[dict]] = {}
    for p in pairs:
        if p["decided"]:
            by_winner.setdefault(p["winner"], []).append(p)
    for winner in sorted(by_winner, key=lambda w: order.index(w) if w in order else len(order)):
        parts = [f"to {p['loser']} ({p['effect']}, {_p(p['p'])})" for p in by_winner[winner]]
        summary.append(f"{winner} is preferred " + _list(parts) + ".")
    undecided = [p for p in pairs if not p["decided"]]
    for p in undecided[:MAX_LISTED_UNDECIDED]:
        text = f"{p['winner']} vs {p['loser']} is undecided ({p['effect']}, {_p(p['p'])}, {p['n']} {p['unit']}; "
        if p["more_for_80_power"] is None and p.get("no_difference"):
            text += "no difference observed, so no number of judgments can be estimated)."
        elif p["more_for_80_power"] is None:
            text += "the report has no power estimate for this pair: see Time to significance)."
        else:
            text += f"about {p['more_for_80_power']:,} more would be needed for 80% power)."
        summary.append(text)
    if len(undecided) > MAX_LISTED_UNDECIDED:
        summary.append(f"{len(undecided) - MAX_LISTED_UNDECIDED} more pairs are undecided (see the tables below).")
    if report.get("filtered_annotators"):
        summary.append(
            f"{len(report['filtered_annotators'])} annotators were filtered out by quality control "
            "and are not counted above."
        )
    return {"summary": summary, "pairs": pairs, "limits": LIMITS.get(method, "")}
