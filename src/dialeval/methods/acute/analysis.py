"""ACUTE-Eval (PW-Dialog) analysis: a Dataset in, the JSON-ready report dict out (Li et al. 2019;
Smith et al. 2022, §3.1.3).

Judgment values: {"winner": conversation id, "loser": conversation id}. A conversation is mapped
to the bot under evaluation through unit.payload["speakers_to_eval"] (aligned with
unit.conversation_ids), else the conversation's single bot. Onboarding and practice judgments
(`analysis.practice.is_practice`: by question, unit kind or meta) and judgments of filtered annotators are
left out of the statistics and counted under `excluded`.

The helpers it shares with the other pairwise analyses are in `analysis/shared.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
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

__all__ = ["analyze_acute"]

# time to significance for every matchup up to this many (10 bots); beyond, adjacent pairs only
TTS_ALL_PAIRS_UP_TO = 45


# ---------------------------------------------------------------- ACUTE


def _conversation_bot(dataset: Dataset) -> dict[str, str]:
    out: dict[str, str] = {}
    for c in dataset.conversations:
        if len(set(c.bots)) == 1:
            out[c.id] = c.bots[0]
    return out


def acute_frame(
    dataset: Dataset, exclude_annotators: Iterable[str] | None = None
) -> tuple[pd.DataFrame, list[Judgment], dict[str, Any]]:
    """One row per kept judgment: question, annotator, unit, winner/loser conversation and bot,
    first_conv (shown first), elapsed_s, created_at, justification."""
    units: dict[str | None, Unit] = {u.id: u for u in dataset.units}  # a judgment without a unit finds none
    conv_bot: dict[Any, str] = _conversation_bot(dataset)
    kept, onboarding, summary = split_judgments(dataset, exclude_annotators)
    unit_speakers: dict[str | None, dict[Any, str]] = {}  # unit -> conversation -> its bot
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
        shown: Sequence[str | None] = j.shown_order or (unit.conversation_ids if unit is not None else None) or [None]
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
                "guided": (j.meta or {}).get("guided"),  # judge-guided ticket (scheduling/tickets.py), else None
            }
        )
    summary["unmapped_judgments"] = unmapped
    return judgment_frame(kept, rows), onboarding, summary


def _analyze_question(
    df: pd.DataFrame, onboarding_s: float, n_boot: int, n_sim: int, seed: int | None
) -> dict[str, Any]:
    duel = df[df["winner"] != df["loser"]]
    counts = pd.concat([duel["winner"], duel["loser"]]).value_counts().to_dict()
    matchups = pw.pair_table(duel)
    systems = systems_from_matchups(matchups, counts)
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
        r = tts_pairwise(outcomes, sec, onboarding_s, per_annotator, n_sim, seed)
        if r is not None:
            tts.append({"a": m.a, "b": m.b, **r})

    return {
        "n": len(df),
        "systems": systems,
        "matchups": to_jsonable(matchups),
        "grid": grid.to_dict(),
        "grid_formatted": to_jsonable(grid.formatted().reset_index().rename(columns={"index": "bot"})),
        "leaderboard": bt_leaderboard(votes, n_boot, seed),
        "robustness": robustness_section(votes),
        "agreement": agree,
        "aa_test": aa,
        "justifications": justification_summary(duel, "winner"),
        "seconds_per_judgment": sec,
        "time_to_significance": tts,
    }


def _style(dataset: Dataset, df: pd.DataFrame, board: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Style control on the evaluated speaker's lines of the two conversations (analysis/ranking.py)."""
    spoken: dict[tuple[str, str], str] = {}
    for conv in dataset.conversations:
        for t in conv.turns:
            if t.bot is not None and not t.is_seed:
                key = (conv.id, t.bot)
                spoken[key] = spoken[key] + "\n\n" + t.text if key in spoken else t.text
    rows = []
    for r in df[df["winner"] != df["loser"]].itertuples(index=False):
        first_is_winner = r.first_conv == r.winner_conv
        first, other = (r.winner, r.loser) if first_is_winner else (r.loser, r.winner)
        conv_first, conv_other = (r.winner_conv, r.loser_conv) if first_is_winner else (r.loser_conv, r.winner_conv)
        text_first, text_other = spoken.get((conv_first, first)), spoken.get((conv_other, other))
        if text_first is not None and text_other is not None:
            rows.append((first, other, text_first, text_other, first_is_winner))
    return style_of_choices(rows, [{"name": row["name"]} for row in board])


def _unfiltered_outcomes(dataset: Dataset) -> dict[str, list[tuple[Any, ...]]]:
    """Per question, (winner, loser, winner, annotator) of every non-onboarding judgment, those of
    filtered annotators included (what the scheduler saw before they were filtered)."""
    everyone = Dataset(dataset.method, dataset.conversations, [], dataset.units, dataset.judgments, dataset.meta)
    df, _, _ = acute_frame(everyone, None)
    if df.empty:
        return {}
    return {
        q: list(zip(g["winner"], g["loser"], g["winner"], g["annotator"], g["guided"]))
        for q, g in df.groupby("question")
    }


def analyze_acute(
    dataset: Dataset,
    exclude_annotators: Iterable[str] | None = None,
    n_boot: int = 1000,
    n_sim: int = 500,
    seed: int | None = 0,
) -> dict[str, Any]:
    """ACUTE-Eval report.

    Top level (for the most answered question; every question under `by_question`): method,
    question, n, systems [{name, n, score, wins, losses, opponents}] best first (score = mean win
    rate over opponents), matchups [{a, b, wins_a, wins_b, n, win_rate_a, p, stars}], grid
    (win rate of row over column, with p), leaderboard (Bradley–Terry), agreement (on pairs of
    conversations with >= 2 annotations), aa_test (same bot on both sides), justifications,
    time_to_significance (per matchup, when judgments carry elapsed_s; with more than
    45 matchups only for the pairs adjacent in the ranking), question_agreement
    (Li et al. 2019, Table 1: per question), excluded, stopping ({rule, selection, pairs: the anytime-valid
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
                "stopping": pairwise_stopping(dataset, "acute", []),
            }
        )
        jsonable: dict[str, Any] = to_jsonable(report)
        return jsonable
    onboarding_s = mean_onboarding_seconds(onboarding)
    config = dataset.meta.get("config") if isinstance(dataset.meta, dict) else None
    everyone_rows = df
    df, screened_out = screen_choices(df, "winner", "loser", annotator_options(config))
    by_q = {q: _analyze_question(g, onboarding_s, n_boot, n_sim, seed) for q, g in df.groupby("question", sort=True)}
    everyone = _unfiltered_outcomes(dataset) if excluded["filtered_judgments"] else {}
    for q, g in df.groupby("question", sort=True):
        outcomes = list(zip(g["winner"], g["loser"], g["winner"], g["annotator"], g["guided"]))
        by_q[q]["stopping"] = pairwise_stopping(dataset, "acute", outcomes, everyone.get(q), question=q)
        anytime_valid_p(by_q[q])
    main = df["question"].value_counts().sort_index().idxmax()
    items = df.assign(item=[tuple(sorted((w, l_))) for w, l_ in zip(df["winner_conv"], df["loser_conv"])])
    qa = pw.question_agreement(items, question="question", item="item", choice="winner_conv")
    report.update({"question": main, **by_q[main]})
    report["by_question"] = by_q
    report["question_agreement"] = qa
    style = _style(dataset, df[df["question"] == main], report.get("leaderboard") or [])
    if style is not None:
        report["style_control"] = style
    report["onboarding_seconds"] = onboarding_s
    main_rows = everyone_rows[everyone_rows["question"] == main]
    report["annotator_model"] = choice_model_section(
        config,
        main_rows.assign(
            pair=[" | ".join(sorted((w, l_))) for w, l_ in zip(main_rows["winner_conv"], main_rows["loser_conv"])]
        ),
        winner="winner",
        loser="loser",
        item=("pair",),
        choice="winner_conv",
        other="loser_conv",
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
