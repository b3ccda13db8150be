"""What the pairwise analyses share (ACUTE, PW-Turn, arena; SM reuses the judgment split): which
judgments count (practice and filtered annotators left out), the judgment frame, the leaderboard and
time-to-significance helpers, the anytime-valid stopping section. Lives outside every method package
so that no method's analysis imports another's.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from dialeval.analysis import ranking
from dialeval.analysis.practice import is_practice
from dialeval.analysis.stopping import stopping_section
from dialeval.annotator_rules import is_filtered
from dialeval.jsonable import to_jsonable
from dialeval.records import Dataset, Judgment, Unit
from dialeval.scheduling.pools import PairPool
from dialeval.stats import pairwise as pw
from dialeval.stats.bradley_terry import aggregate_votes, bradley_terry, fit_bt
from dialeval.stats.power import pairwise_time_to_significance
from dialeval.stats.text import justification_lengths, top_tfidf_terms

# ---------------------------------------------------------------- shared helpers


def _is_onboarding(j: Judgment, unit: Unit | None) -> bool:
    return is_practice(j, unit)


def filtered_annotator_ids(dataset: Dataset, extra: Iterable[str] | None) -> set[str]:
    out = set(extra or ())
    for a in dataset.annotators:
        if is_filtered(None, a.meta):  # the store puts the annotator's status into meta["status"]
            out.add(a.id)
    return out


def split_judgments(
    dataset: Dataset, exclude_annotators: Iterable[str] | None
) -> tuple[list[Judgment], list[Judgment], dict]:
    """(kept, onboarding, excluded-summary)."""
    units = {u.id: u for u in dataset.units}
    filtered = filtered_annotator_ids(dataset, exclude_annotators)
    kept, onboarding, dropped = [], [], 0
    for j in dataset.judgments:
        if _is_onboarding(j, units.get(j.unit_id)):
            onboarding.append(j)
        elif j.annotator_id in filtered:
            dropped += 1
        else:
            kept.append(j)
    summary = {
        "onboarding_judgments": len(onboarding),
        "filtered_annotators": sorted(filtered),
        "filtered_judgments": dropped,
    }
    return kept, onboarding, summary


def mean_onboarding_seconds(onboarding: list[Judgment]) -> float:
    """Mean onboarding time per annotator who onboarded (0 when unknown)."""
    per: dict[str, float] = {}
    for j in onboarding:
        if j.elapsed_s is not None:
            per[j.annotator_id] = per.get(j.annotator_id, 0.0) + float(j.elapsed_s)
    return float(np.mean(list(per.values()))) if per else 0.0


def judgment_frame(judgments: list[Judgment], rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["elapsed_s"] = pd.to_numeric(df.get("elapsed_s"), errors="coerce")
    return df


def systems_from_matchups(matchups: pd.DataFrame, counts: dict[str, int]) -> list[dict]:
    """score = mean over opponents of the bot's win rate against that opponent."""
    rates: dict[str, list[float]] = {b: [] for b in counts}
    wins: dict[str, int] = {b: 0 for b in counts}
    losses: dict[str, int] = {b: 0 for b in counts}
    for r in matchups.itertuples():
        if r.n == 0:
            continue
        rates.setdefault(r.a, []).append(r.win_rate_a)
        rates.setdefault(r.b, []).append(1 - r.win_rate_a)
        wins[r.a] = wins.get(r.a, 0) + r.wins_a
        wins[r.b] = wins.get(r.b, 0) + r.wins_b
        losses[r.a] = losses.get(r.a, 0) + r.wins_b
        losses[r.b] = losses.get(r.b, 0) + r.wins_a
    out = []
    for b, rs in rates.items():
        out.append(
            {
                "name": b,
                "n": int(counts.get(b, 0)),
                "score": float(np.mean(rs)) if rs else None,
                "wins": int(wins.get(b, 0)),
                "losses": int(losses.get(b, 0)),
                "opponents": len(rs),
            }
        )
    out.sort(key=lambda s: (-(s["score"] if s["score"] is not None else -1), s["name"]))
    return out


def bt_leaderboard(votes: pd.DataFrame, n_boot: int, seed: int | None) -> list[dict]:
    """Bradley–Terry leaderboard from DataFrame[a, b, winner]; empty without votes. Each row has its
    tier and provisional mark (analysis/ranking.py, default thresholds)."""
    v = votes[votes["a"] != votes["b"]]
    if v.empty:
        return []
    lb = bradley_terry(v, n_boot=n_boot, seed=seed)
    lb["tier"] = ranking.tiers(list(lb["rating"]), list(lb["ci_low"]), list(lb["ci_high"]))
    lb["provisional"] = ranking.provisional(list(lb["n"]), list(lb["ci_low"]), list(lb["ci_high"]), ranking.DEFAULTS)
    cols = ["name", "rating", "ci_low", "ci_high", "rank", "rank_ci", "wins", "losses", "ties", "n", "tier"]
    return to_jsonable(lb[[*cols, "provisional"]])


def robustness_section(votes: pd.DataFrame) -> dict | None:
    """Votes to drop to reverse the leaderboard's top rank and adjacent pairs (analysis/ranking.py)."""
    v = votes[votes["a"] != votes["b"]]
    if v.empty:
        return None
    names, wins, ties = aggregate_votes(v)
    if len(names) < 2:
        return None
    return ranking.robustness_audit(names, wins, ties, fit_bt(wins, ties))


def tts_pairwise(
    outcomes: np.ndarray, seconds: float | None, onboarding_s: float, per_annotator: float, n_sim: int, seed: int | None
) -> dict | None:
    if seconds is None or not np.isfinite(seconds) or len(outcomes) == 0:
        return None
    r = pairwise_time_to_significance(
        outcomes=outcomes,
        seconds_per_judgment=seconds,
        onboarding_seconds=onboarding_s,
        judgments_per_annotator=max(per_annotator, 1.0),
        n_sim=n_sim,
        seed=seed,
    )
    curve = r.pop("curve")
    r["curve"] = to_jsonable(curve)
    return r


def justification_summary(df: pd.DataFrame, bot_col: str) -> dict:
    if "justification" not in df.columns:
        return {"lengths": [], "top_terms": {}}
    d = df[[bot_col, "justification"]].rename(columns={bot_col: "bot", "justification": "text"})
    d = d[d["text"].notna()]
    if d.empty:
        return {"lengths": [], "top_terms": {}}
    return {"lengths": to_jsonable(justification_lengths(d)), "top_terms": to_jsonable(top_tfidf_terms(d))}


def pairwise_stopping(
    dataset: Dataset,
    method: str,
    outcomes: list[tuple],
    unfiltered: list[tuple] | None = None,
    question: str | None = None,
) -> dict:
    """The report's `stopping` entry (analysis/stopping.py): the anytime-valid stopping table of
    the study's `adaptive:` config, replayed from the kept judgments in the order they were made
    (the scheduler's own view). With adaptive collection disabled it is labelled monitoring only.
    A judge-guided study (scheduling/pools.py) is replayed with the pools its scheduler froze, per `question`."""
    config = dataset.meta.get("config") if isinstance(dataset.meta, dict) else None
    bots = None
    if not config or not config.get("bots"):
        bots = sorted({b for o in outcomes for b in (o[0], o[1])})
    snapshot = dataset.meta.get("judge_guided") if isinstance(dataset.meta, dict) else None
    guided = None
    if snapshot:
        pools = [PairPool.from_dict(d) for d in snapshot.get("pools", [])]
        guided = {(p.a, p.b): p for p in pools if p.question == question} or None
    return stopping_section(outcomes, method, config or {}, bots=bots, unfiltered=unfiltered, guided=guided)


def anytime_valid_p(section: dict) -> None:
    """When collection stopped adaptively, a fixed-size binomial p is not valid (the sample size
    depended on the data): each matchup's `p` becomes the always-valid p-value of the stopping test
    (with its e-value); the binomial one stays as `p_fixed_n`. No change otherwise."""
    stop = section.get("stopping") or {}
    if not stop.get("used_for_stopping"):
        return
    rows = {frozenset((r["a"], r["b"])): r for r in stop.get("pairs", [])}
    for m in section.get("matchups", []):
        row = rows.get(frozenset((m["a"], m["b"])))
        if row is None:
            continue
        m["p_fixed_n"] = m.get("p")
        m["p"] = row["p_always_valid"]
        if row.get("judge_guided") and row.get("win_rate_a") is not None:
            # units were drawn by the judge's doubt: the raw share is not the pair's win rate
            first = row["win_rate_a"] if m["a"] == row["a"] else 1 - row["win_rate_a"]
            m["win_rate_a_raw"] = m.get("win_rate_a")
            m["win_rate_a"] = first
            m["judge_guided"] = True
        m["e_value"] = row.get("e_value")
        m["stars"] = pw.stars(m["p"])
    section["p_values"] = (
        "always-valid (collection stopped adaptively; the stopping test's p-value, "
        "see stopping); p_fixed_n is the fixed-size binomial p, not valid here"
    )
    if any(r.get("judge_guided") for r in rows.values()):
        section["judge_guided_note"] = (
            "Units were drawn by the LLM judge's doubt (adaptive.judge): each matchup's win_rate_a is the "
            "pool-weighted estimate of the stopping test (the raw share of the drawn units is "
            "win_rate_a_raw); the systems' scores, the grid and the Bradley-Terry leaderboard are "
            "computed from the drawn units without weights and lean toward the units the judge doubted."
        )
