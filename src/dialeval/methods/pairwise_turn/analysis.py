"""PW-Turn analysis: a Dataset in, the JSON-ready report dict out (000 §3.1.2, Tables 1/3/5, App. C–F).

Judgment values: {"turn": i (1-based bot turn), "chosen": bot, "other": bot}, one per bot turn.
The conversation of a judgment is judgment.conversation_id, else its unit's first conversation,
else the unit id. Onboarding judgments and filtered annotators are excluded (counted under
`excluded`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from dialeval.analysis.shared import (
    _anytime_valid_p,
    _frame,
    _jsonable,
    _justifications,
    _leaderboard,
    _onboarding_seconds,
    _split_judgments,
    _stopping,
    _systems_from_matchups,
    _tts_pairwise,
)
from dialeval.records import Dataset, Judgment
from dialeval.stats import pairwise as pw

__all__ = ["analyze_pairwise_turn", "pairwise_turn_frame"]


def pairwise_turn_frame(
    dataset: Dataset, exclude_annotators: Iterable[str] | None = None
) -> tuple[pd.DataFrame, list[Judgment], dict]:
    """One row per kept turn judgment: question, annotator, conversation, turn, chosen, other,
    elapsed_s, created_at, justification."""
    units = {u.id: u for u in dataset.units}
    kept, onboarding, summary = _split_judgments(dataset, exclude_annotators)
    rows, bad = [], 0
    for j in kept:
        v = j.value if isinstance(j.value, dict) else {}
        if v.get("chosen") is None or v.get("other") is None or v.get("turn") is None:
            bad += 1
            continue
        unit = units.get(j.unit_id)
        conv = (
            j.conversation_id
            or (unit.conversation_ids[0] if unit is not None and unit.conversation_ids else None)
            or j.unit_id
        )
        rows.append(
            {
                "question": j.question,
                "annotator": j.annotator_id,
                "conversation": conv,
                "turn": int(v["turn"]),
                "chosen": v["chosen"],
                "other": v["other"],
                "elapsed_s": j.elapsed_s,
                "created_at": j.created_at,
                "justification": j.justification,
            }
        )
    summary["malformed_judgments"] = bad
    return _frame(kept, rows), onboarding, summary


def _in(df: pd.DataFrame, turn_range: tuple[int, int] | None) -> pd.DataFrame:
    if turn_range is None:
        return df
    return df[(df["turn"] >= turn_range[0]) & (df["turn"] <= turn_range[1])]


def _analyze_question(
    df: pd.DataFrame,
    turn_range: tuple[int, int],
    chunk_minutes: float,
    onboarding_s: float,
    n_boot: int,
    n_sim: int,
    seed: int | None,
) -> dict:
    duel = df[df["chosen"] != df["other"]]
    ranged = _in(duel, turn_range)
    base = ranged.rename(columns={"chosen": "winner", "other": "loser"})
    counts = pd.concat([ranged["chosen"], ranged["other"]]).value_counts().to_dict()
    systems = _systems_from_matchups(pw.pair_table(base), counts)
    order = [s["name"] for s in systems]
    # bots that only appear outside the range still get a row
    for b in sorted(set(duel["chosen"]) | set(duel["other"])):
        if b not in order:
            order.append(b)
            systems.append({"name": b, "n": 0, "score": None, "wins": 0, "losses": 0, "opponents": 0})
    pos = {b: i for i, b in enumerate(order)}
    pairs = sorted(
        {tuple(sorted((c, o), key=pos.get)) for c, o in zip(duel["chosen"], duel["other"])},
        key=lambda p: (pos[p[0]], pos[p[1]]),
    )

    elapsed = ranged["elapsed_s"].dropna()
    sec = float(elapsed.mean()) if len(elapsed) else None
    matchups = []
    for a, b in pairs:
        pair = duel[duel["chosen"].isin([a, b]) & duel["other"].isin([a, b])]
        rng_s = pw.pw_turn_scores(pair, a, b, turn_range)
        all_s = pw.pw_turn_scores(pair, a, b, None)
        curve = pw.per_turn_win_rates(pair, a, b)
        prange = _in(pair, turn_range)
        variability = None
        if prange["elapsed_s"].notna().any():
            variability = pw.chunk_variability(
                prange.assign(win=(prange["chosen"] == a).astype(float)),
                seconds="elapsed_s",
                score="win",
                chunk_minutes=chunk_minutes,
            )
        per_annotator = len(prange) / max(prange["annotator"].nunique(), 1)
        tts = _tts_pairwise(
            (prange["chosen"] == a).to_numpy(dtype=float), sec, onboarding_s, per_annotator, n_sim, seed
        )
        matchups.append(
            {
                "a": a,
                "b": b,
                "wins_a": rng_s["wins_a"],
                "wins_b": rng_s["wins_b"],
                "n": rng_s["n"],
                "win_rate_a": rng_s["lin"],
                "p": rng_s["p"],
                "stars": rng_s["stars"],
                "lin": rng_s["lin"],
                "sqr": rng_s["sqr"],
                "wta": rng_s["wta"],
                "conversations": rng_s["conversations"],
                "turn_range": list(turn_range),
                "in_range": rng_s,
                "all_turns": all_s,
                "per_turn": curve,
                "variability": variability,
                "time_to_significance": tts,
            }
        )
    votes = pd.DataFrame({"a": ranged["chosen"], "b": ranged["other"], "winner": ranged["chosen"]})
    return {
        "n": len(df),
        "n_in_range": len(ranged),
        "systems": systems,
        "matchups": matchups,
        "grid": pw.win_rate_grid(base, bots=order).to_dict(),
        "leaderboard": _leaderboard(votes, n_boot, seed),
        "justifications": _justifications(duel, "chosen"),
        "seconds_per_judgment": sec,
        "time_to_significance": [
            {"a": m["a"], "b": m["b"], **m["time_to_significance"]}
            for m in matchups
            if m["time_to_significance"] is not None
        ],
    }


def analyze_pairwise_turn(
    dataset: Dataset,
    turn_range: tuple[int, int] = (2, 6),
    exclude_annotators: Iterable[str] | None = None,
    chunk_minutes: float = 45.0,
    n_boot: int = 1000,
    n_sim: int = 500,
    seed: int | None = 0,
) -> dict:
    """PW-Turn report.

    Top level (for the most answered question; all under `by_question`): method, question,
    turn_range, systems [{name, n, score, ...}] best first (score = mean Lin win rate over
    opponents on turns in `turn_range`), matchups [{a, b, wins_a, wins_b, n, win_rate_a, p, stars,
    lin, sqr, wta, in_range, all_turns, per_turn, variability, time_to_significance}] where the
    headline numbers use `turn_range` and `all_turns` repeats them over every turn, grid,
    leaderboard (Bradley–Terry on turn votes in range), justifications, time_to_significance,
    excluded, stopping (the anytime-valid stopping table of the `adaptive:` config over every
    turn judgment, as the scheduler sees them; "monitoring only" when adaptive is disabled).
    """
    df, onboarding, excluded = pairwise_turn_frame(dataset, exclude_annotators)
    report: dict[str, Any] = {"method": "pairwise-turn", "turn_range": list(turn_range), "excluded": excluded}
    if df.empty:
        report.update(
            {
                "question": None,
                "n": 0,
                "systems": [],
                "matchups": [],
                "leaderboard": [],
                "by_question": {},
                "time_to_significance": [],
                "stopping": _stopping(dataset, "pairwise-turn", []),
            }
        )
        return _jsonable(report)
    onboarding_s = _onboarding_seconds(onboarding)
    by_q = {
        q: _analyze_question(g, turn_range, chunk_minutes, onboarding_s, n_boot, n_sim, seed)
        for q, g in df.groupby("question", sort=True)
    }
    for q, g in df.groupby("question", sort=True):  # every turn counts (the scheduler's view), not turn_range
        by_q[q]["stopping"] = _stopping(
            dataset, "pairwise-turn", list(zip(g["chosen"], g["other"], g["chosen"], g["annotator"]))
        )
        _anytime_valid_p(by_q[q])
    main = df["question"].value_counts().sort_index().idxmax()
    report.update({"question": main, **by_q[main]})
    report["by_question"] = by_q
    report["onboarding_seconds"] = onboarding_s
    from ...analysis.metrics import metric_report

    if (metrics := metric_report(dataset, report)) is not None:
        report["automatic_metrics"] = metrics
    return _jsonable(report)
