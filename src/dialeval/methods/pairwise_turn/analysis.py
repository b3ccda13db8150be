"""PW-Turn analysis: a Dataset in, the JSON-ready report dict out (Smith et al. 2022, §3.1.2, Tables 1/3/5, App. C–F).

Judgment values: {"turn": i (1-based bot turn), "chosen": bot, "other": bot}, one per bot turn.
The conversation of a judgment is judgment.conversation_id, else its unit's first conversation,
else the unit id. Onboarding judgments and filtered annotators are excluded (counted under
`excluded`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from dialeval.analysis.annotators import annotator_options, choice_model_section, model_judges, screen_choices
from dialeval.analysis.ranking import style_of_choices
from dialeval.analysis.shared import (
    anytime_valid_p,
    bt_leaderboard,
    judgment_frame,
    justification_summary,
    mean_onboarding_seconds,
    pairwise_stopping,
    robustness_section,
    split_judgments,
    systems_from_matchups,
    tts_pairwise,
)
from dialeval.jsonable import to_jsonable
from dialeval.records import Dataset, Judgment, Unit
from dialeval.stats import pairwise as pw

__all__ = ["analyze_pairwise_turn", "pairwise_turn_frame"]


def pairwise_turn_frame(
    dataset: Dataset, exclude_annotators: Iterable[str] | None = None
) -> tuple[pd.DataFrame, list[Judgment], dict[str, Any]]:
    """One row per kept turn judgment: question, annotator, conversation, turn, chosen, other,
    elapsed_s, created_at, justification."""
    units: dict[str | None, Unit] = {u.id: u for u in dataset.units}  # a judgment without a unit finds none
    kept, onboarding, summary = split_judgments(dataset, exclude_annotators)
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
    return judgment_frame(kept, rows), onboarding, summary


def _style(dataset: Dataset, df: pd.DataFrame, board: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Style control on the two replies of each voted turn (analysis/ranking.py); side a is the reply
    shown first."""
    replies: dict[tuple[str, int], tuple[dict[str, str], list[str]]] = {}
    for conv in dataset.conversations:
        for t in conv.turns:
            if t.candidates and isinstance((t.meta or {}).get("turn"), int):
                texts = {str(c.get("bot")): str(c.get("text")) for c in t.candidates if isinstance(c, dict)}
                replies[(conv.id, t.meta["turn"])] = (texts, list((t.meta or {}).get("shown_order") or []))
    rows = []
    for r in df.itertuples(index=False):
        texts, shown = replies.get((r.conversation, int(r.turn)), ({}, []))
        if r.chosen not in texts or r.other not in texts:
            continue
        first_is_chosen = not shown or shown[0] == r.chosen
        first, other = (r.chosen, r.other) if first_is_chosen else (r.other, r.chosen)
        rows.append((first, other, texts[first], texts[other], first_is_chosen))
    return style_of_choices(rows, [{"name": row["name"]} for row in board])


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
) -> dict[str, Any]:
    duel = df[df["chosen"] != df["other"]]
    ranged = _in(duel, turn_range)
    base = ranged.rename(columns={"chosen": "winner", "other": "loser"})
    counts = pd.concat([ranged["chosen"], ranged["other"]]).value_counts().to_dict()
    systems = systems_from_matchups(pw.pair_table(base), counts)
    order = [s["name"] for s in systems]
    # bots that only appear outside the range still get a row
    for b in sorted(set(duel["chosen"]) | set(duel["other"])):
        if b not in order:
            order.append(b)
            systems.append({"name": b, "n": 0, "score": None, "wins": 0, "losses": 0, "opponents": 0})
    pos = {b: i for i, b in enumerate(order)}
    pairs = sorted(
        {tuple(sorted((c, o), key=pos.__getitem__)) for c, o in zip(duel["chosen"], duel["other"])},
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
        tts = tts_pairwise((prange["chosen"] == a).to_numpy(dtype=float), sec, onboarding_s, per_annotator, n_sim, seed)
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
        "leaderboard": bt_leaderboard(votes, n_boot, seed),
        "robustness": robustness_section(votes),
        "justifications": justification_summary(duel, "chosen"),
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
) -> dict[str, Any]:
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
                "stopping": pairwise_stopping(dataset, "pairwise-turn", []),
            }
        )
        jsonable: dict[str, Any] = to_jsonable(report)
        return jsonable
    onboarding_s = mean_onboarding_seconds(onboarding)
    config = dataset.meta.get("config") if isinstance(dataset.meta, dict) else None
    everyone = df
    df, screened_out = screen_choices(df, "chosen", "other", annotator_options(config))
    by_q = {
        q: _analyze_question(g, turn_range, chunk_minutes, onboarding_s, n_boot, n_sim, seed)
        for q, g in df.groupby("question", sort=True)
    }
    for q, g in df.groupby("question", sort=True):  # every turn counts (the scheduler's view), not turn_range
        by_q[q]["stopping"] = pairwise_stopping(
            dataset, "pairwise-turn", list(zip(g["chosen"], g["other"], g["chosen"], g["annotator"]))
        )
        anytime_valid_p(by_q[q])
    main = df["question"].value_counts().sort_index().idxmax()
    report.update({"question": main, **by_q[main]})
    report["by_question"] = by_q
    style = _style(dataset, df[df["question"] == main], report.get("leaderboard") or [])
    if style is not None:
        report["style_control"] = style
    report["onboarding_seconds"] = onboarding_s
    report["annotator_model"] = choice_model_section(
        config,
        everyone[everyone["question"] == main],
        winner="chosen",
        loser="other",
        item=("conversation", "turn"),
        choice="chosen",
        other="other",
        judges=model_judges(dataset),
        excluded=screened_out,
        n_boot=n_boot,
        seed=seed or 0,
    )
    from ...analysis.metrics import metric_report

    if (metrics := metric_report(dataset, report)) is not None:
        report["automatic_metrics"] = metrics
    jsonable = to_jsonable(report)
    return jsonable
