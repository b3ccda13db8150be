"""ACUTE-Eval (PW-Dialog) analysis: a Dataset in, the JSON-ready report dict out (003; 000 §3.1.3).

Judgment values: {"winner": conversation id, "loser": conversation id}. A conversation is mapped
to the bot under evaluation through unit.payload["speakers_to_eval"] (aligned with
unit.conversation_ids), else the conversation's single bot. Onboarding and practice judgments
(`analysis.practice.is_practice`: by question, unit kind or meta) and judgments of filtered annotators are
left out of the statistics and counted under `excluded`.

The helpers prefixed with `_` are shared by the other analysis modules.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from dialeval.analysis.practice import is_practice
from dialeval.jsonable import to_jsonable
from dialeval.records import Dataset, Judgment, Unit
from dialeval.stats import pairwise as pw
from dialeval.stats.bradley_terry import bradley_terry
from dialeval.stats.power import pairwise_time_to_significance
from dialeval.stats.text import justification_lengths, top_tfidf_terms

__all__ = ["analyze_acute"]

_FILTER_STATUSES = {"filtered", "excluded", "blocked", "failed", "rejected"}
# time to significance for every matchup up to this many (10 bots); beyond, adjacent pairs only
TTS_ALL_PAIRS_UP_TO = 45


# ---------------------------------------------------------------- shared helpers


# Kept as a name: pairwise_turn and single_model import it from here.
_jsonable = to_jsonable


def _is_onboarding(j: Judgment, unit: Unit | None) -> bool:
    return is_practice(j, unit)


def _filtered_annotators(dataset: Dataset, extra: Iterable[str] | None) -> set[str]:
    out = set(extra or ())
    for a in dataset.annotators:
        m = a.meta or {}
        if m.get("filtered") or m.get("excluded") or str(m.get("status", "")).lower() in _FILTER_STATUSES:
            out.add(a.id)
    return out


def _split_judgments(
    dataset: Dataset, exclude_annotators: Iterable[str] | None
) -> tuple[list[Judgment], list[Judgment], dict]:
    """(kept, onboarding, excluded-summary)."""
    units = {u.id: u for u in dataset.units}
    filtered = _filtered_annotators(dataset, exclude_annotators)
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


def _onboarding_seconds(onboarding: list[Judgment]) -> float:
    """Mean onboarding time per annotator who onboarded (0 when unknown)."""
    per: dict[str, float] = {}
    for j in onboarding:
        if j.elapsed_s is not None:
            per[j.annotator_id] = per.get(j.annotator_id, 0.0) + float(j.elapsed_s)
    return float(np.mean(list(per.values()))) if per else 0.0


def _frame(judgments: list[Judgment], rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["elapsed_s"] = pd.to_numeric(df.get("elapsed_s"), errors="coerce")
    return df


def _systems_from_matchups(matchups: pd.DataFrame, counts: dict[str, int]) -> list[dict]:
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


def _leaderboard(votes: pd.DataFrame, n_boot: int, seed: int | None) -> list[dict]:
    """Bradley–Terry leaderboard from DataFrame[a, b, winner]; empty without votes."""
    v = votes[votes["a"] != votes["b"]]
    if v.empty:
        return []
    lb = bradley_terry(v, n_boot=n_boot, seed=seed)
    cols = ["name", "rating", "ci_low", "ci_high", "rank", "rank_ci", "wins", "losses", "ties", "n"]
    return _jsonable(lb[cols])


def _tts_pairwise(
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
    r["curve"] = _jsonable(curve)
    return r


def _justifications(df: pd.DataFrame, bot_col: str) -> dict:
    if "justification" not in df.columns:
        return {"lengths": [], "top_terms": {}}
    d = df[[bot_col, "justification"]].rename(columns={bot_col: "bot", "justification": "text"})
    d = d[d["text"].notna()]
    if d.empty:
        return {"lengths": [], "top_terms": {}}
    return {"lengths": _jsonable(justification_lengths(d)), "top_terms": _jsonable(top_tfidf_terms(d))}


# ---------------------------------------------------------------- ACUTE


def _conversation_bot(dataset: Dataset) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in dataset.conversations:
        if len(set(c.bots)) == 1:
            out[c.id] = c.bots[0]
    return out


def acute_frame(
    dataset: Dataset, exclude_annotators: Iterable[str] | None = None
) -> tuple[pd.DataFrame, list[Judgment], dict]:
    """One row per kept judgment: question, annotator, unit, winner/loser conversation and bot,
    first_conv (shown first), elapsed_s, created_at, justification."""
    units = {u.id: u for u in dataset.units}
    conv_bot: dict[Any, str] = _conversation_bot(dataset)
    kept, onboarding, summary = _split_judgments(dataset, exclude_annotators)
    unit_speakers: dict[str | None, dict] = {}
    rows, unmapped = [], 0
    for j in kept:
        v = j.value if isinstance(j.value, dict) else {}
        win_c, lose_c = v.get("winner"), v.get("loser")
        unit = units.get(j.unit_id)
        speakers = unit_speakers.get(j.unit_id) if unit is not None else None
        if speakers is None and unit is not None:
            given = unit.payload.get("speakers_to_eval")
            speakers = (
                dict(zip(unit.conversation_ids, given)) if given and len(given) == len(unit.conversation_ids) else {}
            )
            unit_speakers[j.unit_id] = speakers
        # the unit's speakers_to_eval first, else the conversation's single bot (no copy per judgment)
        wb = speakers.get(win_c, conv_bot.get(win_c)) if speakers else conv_bot.get(win_c)
        lb = speakers.get(lose_c, conv_bot.get(lose_c)) if speakers else conv_bot.get(lose_c)
        if wb is None or lb is None:
            unmapped += 1
            continue
        shown = j.shown_order or (unit.conversation_ids if unit is not None else None) or [None]
        rows.append(
            {
                "question": j.question,
                "annotator": j.annotator_id,
                "unit": j.unit_id,
                "winner_conv": win_c,
                "loser_conv": lose_c,
                "winner": wb,
                "loser": lb,
                "first_conv": shown[0],
                "order_known": j.shown_order is not None,
                "elapsed_s": j.elapsed_s,
                "created_at": j.created_at,
                "justification": j.justification,
            }
        )
    summary["unmapped_judgments"] = unmapped
    return _frame(kept, rows), onboarding, summary


def _analyze_question(df: pd.DataFrame, onboarding_s: float, n_boot: int, n_sim: int, seed: int | None) -> dict:
    duel = df[df["winner"] != df["loser"]]
    counts = pd.concat([duel["winner"], duel["loser"]]).value_counts().to_dict()
    matchups = pw.pair_table(duel)
    systems = _systems_from_matchups(matchups, counts)
    order = [s["name"] for s in systems]
    matchups = pw.pair_table(duel, order=order)
    grid = pw.win_rate_grid(duel, bots=order)
    votes = pd.DataFrame({"a": duel["winner"], "b": duel["loser"], "winner": duel["winner"]})

    # agreement on the same pair of conversations
    items = df.assign(item=[tuple(sorted((w, l_))) for w, l_ in zip(df["winner_conv"], df["loser_conv"])])
    agree = pw.agreement(items, item="item", choice="winner_conv")

    if not agree.get("items"):
        agree["note"] = "no pair of conversations was judged by two annotators, so agreement cannot be measured"

    # The A/A check of ACUTE-Eval: with the same bot on both sides the left side should win half the
    # time. Without such pairs in the study, the same check runs over every comparison: sides are
    # randomised, so the left side should still win about half of them (no position bias).
    aa_rows = df[df["winner"] == df["loser"]]
    if len(aa_rows):
        aa = pw.aa_test((aa_rows["winner_conv"] == aa_rows["first_conv"]).tolist())
        aa["check"] = "same bot on both sides: the left side should win half the time"
        aa["bots"] = sorted(set(aa_rows["winner"]))
    elif df["order_known"].any():
        known = df[df["order_known"]]
        aa = pw.aa_test((known["winner_conv"] == known["first_conv"]).tolist())
        aa["check"] = "position: sides are randomised, so the left side should win half of all comparisons"
    else:
        aa = {"check": "position", "n": 0, "note": "the judgments record no side order, so no A/A check is possible"}

    elapsed = df["elapsed_s"].dropna()
    sec = float(elapsed.mean()) if len(elapsed) else None
    per_annotator = len(df) / max(df["annotator"].nunique(), 1)
    tts = []
    # one pass splits the duels by unordered bot pair (not one scan of the frame per matchup)
    lo = np.where(duel["winner"].to_numpy() < duel["loser"].to_numpy(), duel["winner"], duel["loser"])
    hi = np.where(duel["winner"].to_numpy() < duel["loser"].to_numpy(), duel["loser"], duel["winner"])
    by_pair = (
        pd.Series(duel["winner"].to_numpy(), index=pd.MultiIndex.from_arrays([lo, hi]))
        .groupby(level=[0, 1], sort=False)
        .indices
    )
    winners = duel["winner"].to_numpy()
    timed = matchups
    if len(matchups) > TTS_ALL_PAIRS_UP_TO:
        # many bots (an arena): only the pairs adjacent in the ranking, the ones a study is sized for
        rank = {name: k for k, name in enumerate(order)}
        timed = matchups[[abs(rank[a] - rank[b]) == 1 for a, b in zip(matchups["a"], matchups["b"])]]
    for m in timed.itertuples():
        rows = by_pair.get((m.a, m.b) if m.a < m.b else (m.b, m.a), np.zeros(0, dtype=int))
        outcomes = (winners[rows] == m.a).astype(float)
        r = _tts_pairwise(outcomes, sec, onboarding_s, per_annotator, n_sim, seed)
        if r is not None:
            tts.append({"a": m.a, "b": m.b, **r})

    return {
        "n": len(df),
        "systems": systems,
        "matchups": _jsonable(matchups),
        "grid": grid.to_dict(),
        "grid_formatted": _jsonable(grid.formatted().reset_index().rename(columns={"index": "bot"})),
        "leaderboard": _leaderboard(votes, n_boot, seed),
        "agreement": agree,
        "aa_test": aa,
        "justifications": _justifications(duel, "winner"),
        "seconds_per_judgment": sec,
        "time_to_significance": tts,
    }


def _stopping(dataset: Dataset, method: str, outcomes: list[tuple], unfiltered: list[tuple] | None = None) -> dict:
    """The report's `stopping` entry (adaptive.stopping_section): the anytime-valid stopping table of
    the study's `adaptive:` config, replayed from the kept judgments in the order they were made
    (the scheduler's own view). With adaptive collection disabled it is labelled monitoring only."""
    from dialeval.adaptive import stopping_section

    config = dataset.meta.get("config") if isinstance(dataset.meta, dict) else None
    bots = None
    if not config or not config.get("bots"):
        bots = sorted({b for o in outcomes for b in (o[0], o[1])})
    return stopping_section(outcomes, method, config or {}, bots=bots, unfiltered=unfiltered)


def _anytime_valid_p(section: dict) -> None:
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
        m["e_value"] = row.get("e_value")
        m["stars"] = pw.stars(m["p"])
    section["p_values"] = (
        "always-valid (collection stopped adaptively; the stopping test's p-value, "
        "see stopping); p_fixed_n is the fixed-size binomial p, not valid here"
    )


def _unfiltered_outcomes(dataset: Dataset) -> dict[str, list[tuple]]:
    """Per question, (winner, loser, winner, annotator) of every non-onboarding judgment, those of
    filtered annotators included (what the scheduler saw before they were filtered)."""
    everyone = Dataset(dataset.method, dataset.conversations, [], dataset.units, dataset.judgments, dataset.meta)
    df, _, _ = acute_frame(everyone, None)
    if df.empty:
        return {}
    return {q: list(zip(g["winner"], g["loser"], g["winner"], g["annotator"])) for q, g in df.groupby("question")}


def analyze_acute(
    dataset: Dataset,
    exclude_annotators: Iterable[str] | None = None,
    n_boot: int = 1000,
    n_sim: int = 500,
    seed: int | None = 0,
) -> dict:
    """ACUTE-Eval report.

    Top level (for the most answered question; every question under `by_question`): method,
    question, n, systems [{name, n, score, wins, losses, opponents}] best first (score = mean win
    rate over opponents), matchups [{a, b, wins_a, wins_b, n, win_rate_a, p, stars}], grid
    (win rate of row over column, with p), leaderboard (Bradley–Terry), agreement (on pairs of
    conversations with >= 2 annotations), aa_test (same bot on both sides), justifications,
    time_to_significance (per matchup, when judgments carry elapsed_s; with more than
    45 matchups only for the pairs adjacent in the ranking), question_agreement
    (003 Table 1: per question), excluded, stopping ({rule, selection, pairs: the anytime-valid
    stopping table per bot pair, ...}; see adaptive.stopping_section; "monitoring only" when the
    study's `adaptive.enabled` is false).
    """
    df, onboarding, excluded = acute_frame(dataset, exclude_annotators)
    report: dict[str, Any] = {"method": "acute", "excluded": excluded}
    if df.empty:
        report.update(
            {
                "question": None,
                "n": 0,
                "systems": [],
                "matchups": [],
                "leaderboard": [],
                "by_question": {},
                "question_agreement": [],
                "time_to_significance": [],
                "stopping": _stopping(dataset, "acute", []),
            }
        )
        return _jsonable(report)
    onboarding_s = _onboarding_seconds(onboarding)
    by_q = {q: _analyze_question(g, onboarding_s, n_boot, n_sim, seed) for q, g in df.groupby("question", sort=True)}
    everyone = _unfiltered_outcomes(dataset) if excluded["filtered_judgments"] else {}
    for q, g in df.groupby("question", sort=True):
        outcomes = list(zip(g["winner"], g["loser"], g["winner"], g["annotator"]))
        by_q[q]["stopping"] = _stopping(dataset, "acute", outcomes, everyone.get(q))
        _anytime_valid_p(by_q[q])
    main = df["question"].value_counts().sort_index().idxmax()
    items = df.assign(item=[tuple(sorted((w, l_))) for w, l_ in zip(df["winner_conv"], df["loser_conv"])])
    qa = pw.question_agreement(items, question="question", item="item", choice="winner_conv")
    report.update({"question": main, **by_q[main]})
    report["by_question"] = by_q
    report["question_agreement"] = qa
    report["onboarding_seconds"] = onboarding_s
    from .metrics import metric_report

    if (metrics := metric_report(dataset, report)) is not None:
        report["automatic_metrics"] = metrics
    return _jsonable(report)
