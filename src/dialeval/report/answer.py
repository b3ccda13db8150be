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


def p_text(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "p not available"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def pct(rate: float) -> str:
    return f"{rate:.0%}"


def binomial_n_needed(rate: float | None, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Judgments for a two-sided binomial test at the observed win rate to reach `power` (normal
    approximation; None when no difference was observed)."""
    if rate is None or not 0 < rate < 1 or abs(rate - 0.5) < 1e-9:
        return None
    from scipy.special import ndtri  # = scipy.stats.norm.ppf, bit for bit, without importing scipy.stats

    z_a, z_b = ndtri(1 - alpha / 2), ndtri(power)
    n = ((z_a * 0.5 + z_b * math.sqrt(rate * (1 - rate))) / (rate - 0.5)) ** 2
    return int(math.ceil(n))


def tts_lookup(report: dict[str, Any], a: str, b: str, metric: str | None = None) -> dict | None:
    for entry in report.get("time_to_significance") or []:
        if not isinstance(entry, dict) or {entry.get("a"), entry.get("b")} != {a, b}:
            continue
        if metric is not None and entry.get("metric") not in (None, metric):
            continue
        return entry
    return None


def needed_total(entry: dict | None, per_group: bool = False) -> int | None:
    """Total judgments of a pair for 80% power from the report's own time_to_significance entry;
    `per_group`: its n_needed counts one system's side (t-tests, Mann-Whitney), so both sides double it."""
    if not entry:
        return None
    for key in ("n_needed", "n_needed_sim", "n_needed_approx"):
        value = entry.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(value) * (2 if per_group else 1)
    return None


def pair(
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


def pairwise_pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Pairwise preference methods (ACUTE-Eval, PW-Turn): matchups {a, b, wins_a, wins_b, n, win_rate_a, p}."""
    out = []
    for m in report.get("matchups") or []:
        rate, n = m.get("win_rate_a"), int(m.get("n") or 0)
        if rate is None or not n:
            continue
        a, b = (m["a"], m["b"]) if rate >= 0.5 else (m["b"], m["a"])
        share = rate if rate >= 0.5 else 1 - rate
        needed = needed_total(tts_lookup(report, m["a"], m["b"])) or binomial_n_needed(share)
        out.append(pair(a, b, f"{pct(share)}", m.get("p"), n, needed, no_difference=abs(share - 0.5) < 1e-9))
    return out


def _list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _ranked(names: set[str], order: list[str]) -> list[str]:
    return sorted(names, key=lambda n: order.index(n) if n in order else len(order))


def answer(report: dict[str, Any]) -> dict[str, Any]:
    """The report's first section: sentences generated from its statistics (see module docstring)."""
    from ..registry import all_methods

    spec = all_methods().get(str(report.get("method", "")))
    limits = spec.limits if spec else ""
    systems = [s for s in report.get("systems") or [] if isinstance(s, dict) and s.get("name")]
    answer_pairs = spec.load_answer_pairs() if spec else None
    pairs = answer_pairs(report) if answer_pairs else []
    summary: list[str] = []
    # what the data are: simulated annotators included or left out (report/build.py), said last
    simulated = [report["simulated"]["note"]] if (report.get("simulated") or {}).get("note") else []
    if not systems:
        # why there is no ranking, when the method can tell (a prompt set answered by one system)
        unranked = (report.get("no_ranking") or {}).get("note")
        return {
            "summary": [unranked or "No judgments yet: there is nothing to conclude.", *simulated],
            "pairs": [],
            "limits": limits,
        }
    order = [s["name"] for s in systems]
    best = order[0]
    beaten_by_best = {p["loser"] for p in pairs if p["decided"] and p["winner"] == best}
    others = set(order[1:])
    # a leaderboard decides pairs by its intervals (rank = 1 + models wholly above), not by p-values
    by_interval = bool(pairs) and all(p.get("decided_by") == "interval" for p in pairs)
    if len(order) == 1:
        summary.append(f"Only {best} has judgments; there is nothing to compare it with.")
    elif len(order) == 2 and pairs:
        pass  # the one pair's sentence below says it all
    elif others and others <= beaten_by_best:
        summary.append(
            f"{best} ranks first, above every other system: its interval lies wholly above each of theirs."
            if by_interval
            else f"{best} is preferred to every other system, each difference significant at p < {ALPHA}."
        )
    elif beaten_by_best:
        summary.append(
            f"{best} ranks first; its interval lies wholly above those of {_list(_ranked(beaten_by_best, order))}, "
            "not (yet) above the others'."
            if by_interval
            else f"{best} ranks first; it is significantly preferred to {_list(sorted(beaten_by_best))}, "
            "not (yet) to the others."
        )
    elif by_interval:
        summary.append(f"{best} has the highest rating, but its interval overlaps those of all the others.")
    else:
        summary.append(
            f"{best} ranks first, but no difference between it and the others is significant yet (p < {ALPHA})."
        )
    by_winner: dict[str, list[dict]] = {}
    for p in pairs:
        if p["decided"]:
            by_winner.setdefault(p["winner"], []).append(p)
    for winner in sorted(by_winner, key=lambda w: order.index(w) if w in order else len(order)):
        if by_interval:
            losers = _ranked({p["loser"] for p in by_winner[winner]}, order)
            if len(losers) > 2 and losers == order[len(order) - len(losers) :]:  # everyone from there down
                summary.append(
                    f"{winner} is rated above every system from {losers[0]} down ({len(losers)} systems; "
                    "intervals apart)."
                )
            else:
                summary.append(f"{winner} is rated above {_list(losers)} (intervals apart).")
            continue
        parts = [f"to {p['loser']} ({p['effect']}, {p_text(p['p'])})" for p in by_winner[winner]]
        summary.append(f"{winner} is preferred " + _list(parts) + ".")
    undecided = [p for p in pairs if not p["decided"]]
    for p in undecided[:MAX_LISTED_UNDECIDED]:
        if p.get("decided_by") == "interval":
            summary.append(f"{p['winner']} vs {p['loser']} is undecided ({p['effect']}; {p['n']:,} {p['unit']}).")
            continue
        text = f"{p['winner']} vs {p['loser']} is undecided ({p['effect']}, {p_text(p['p'])}, {p['n']} {p['unit']}; "
        if p["more_for_80_power"] is None and p.get("no_difference"):
            text += "no difference observed, so no number of judgments can be estimated)."
        elif p["more_for_80_power"] is None:
            text += "the report has no power estimate for this pair: see Time to significance)."
        else:
            text += f"about {p['more_for_80_power']:,} more would be needed for 80% power)."
        summary.append(text)
    if len(undecided) > MAX_LISTED_UNDECIDED:
        summary.append(f"{len(undecided) - MAX_LISTED_UNDECIDED} more pairs are undecided (see the tables below).")
    summary.extend(_fragility_sentences(report))
    if report.get("filtered_annotators"):
        n = len(report["filtered_annotators"])
        summary.append(
            f"{n} {'annotator was' if n == 1 else 'annotators were'} filtered out by quality control "
            "and are not counted above."
        )
    summary.extend(_reopened_sentences(report))
    summary.extend(simulated)
    return {"summary": summary, "pairs": pairs, "limits": limits}


def _fragility_sentences(report: dict[str, Any]) -> list[str]:
    """The robustness audit (analysis/ranking.py) in words, in the first paragraph: whether a handful
    of votes decides who is first."""
    audit = report.get("robustness")
    if not isinstance(audit, dict):
        return []
    top = audit.get("top")
    if not isinstance(top, dict) or top.get("dropped") is None:
        return []
    if top["dropped"] == 0:  # equal ratings: nothing needs to go
        return [f"{top['first']} and {top['overtaken_by']} share the top rating: the first place is a tie."]
    share, fragile = top.get("share") or 0.0, audit.get("fragile_share", 0.001)
    votes = f"{top['dropped']:,} of {audit.get('votes', 0):,} votes ({share:.2%})"
    if share < fragile:
        return [
            f"Fragile: dropping just {votes} puts {top['overtaken_by']} above {top['first']}, "
            f"under {fragile:.1%} of the votes; do not read the top rank as settled."
        ]
    return [f"Robustness: it takes dropping {votes} to put {top['overtaken_by']} above {top['first']}."]


def _reopened_sentences(report: dict[str, Any]) -> list[str]:
    """Pairs that adaptive stopping had decided but that are open again once filtered annotators'
    judgments are left out: said in words, never shown silently as merely undecided."""
    # the top-level section repeats the main question's, so per question when there are several
    questions = {q: part for q, part in (report.get("by_question") or {}).items() if isinstance(part, dict)}
    if len(questions) > 1:
        sections = [(f" (question {q})", part.get("stopping")) for q, part in questions.items()]
    else:
        sections = [("", report.get("stopping"))]
    out = []
    for where, stop in sections:
        for row in (stop or {}).get("pairs") or []:
            if not row.get("reopened_by_filtering"):
                continue
            before = row.get("decided_before_filtering") or {}
            out.append(
                f"{row['a']} vs {row['b']}{where} was decided while collecting ({before.get('winner')} preferred "
                f"after {before.get('stopped_at_n')} judgments), but without the judgments of the annotators "
                "filtered out afterwards it is no longer decided: it is reported as undecided."
            )
    return out
