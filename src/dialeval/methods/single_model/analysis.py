"""SM-Turn + SM-Dialog analysis: a Dataset in, the JSON-ready report dict out (Smith et al. 2022,
§3.1.4, §4.3, App. F/G).

Judgments: question "turn" with {"turn": i, "engaging": bool, "humanlike": bool, "interesting": bool}
and question "dialog" with Likert 1..5 per quality. A judgment's conversation is
judgment.conversation_id, else its unit's first conversation; its bot is that conversation's
first bot (else unit.payload["bot"] / judgment.meta["bot"]). Onboarding judgments and filtered
annotators are excluded (counted under `excluded`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from dialeval.analysis.shared import mean_onboarding_seconds, split_judgments
from dialeval.jsonable import to_jsonable
from dialeval.records import SM_QUALITIES, Dataset, Judgment, Unit
from dialeval.stats import single_model as smstats
from dialeval.stats.power import single_model_time_to_significance

__all__ = ["analyze_single_model", "single_model_frames"]

DEFAULT_WEIGHTS: tuple[tuple[float, float], ...] = ((1, 0), (1, 1), (1, 5), (1, 10), (0, 1))


def single_model_frames(
    dataset: Dataset, exclude_annotators: Iterable[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[Judgment], dict[str, Any]]:
    """(turns, dialog, timing, onboarding judgments, excluded summary).

    turns: DataFrame[conversation, bot, annotator, turn, <qualities>] (0/1);
    dialog: DataFrame[conversation, bot, annotator, <qualities>] (Likert);
    timing: DataFrame[conversation, bot, annotator, seconds] (sum of elapsed_s per conversation).
    """
    units: dict[str | None, Unit] = {u.id: u for u in dataset.units}  # a judgment without a unit finds none
    convs = dataset.conversation_map()
    kept, onboarding, summary = split_judgments(dataset, exclude_annotators)
    q = list(SM_QUALITIES)
    trows, drows, bad = [], [], 0
    times: dict[tuple[Any, Any, Any], float] = {}  # (conversation, bot, annotator) -> seconds
    for j in kept:
        unit = units.get(j.unit_id)
        cid = (
            j.conversation_id
            or (unit.conversation_ids[0] if unit is not None and unit.conversation_ids else None)
            or j.unit_id
        )
        conv = convs.get(cid) if cid is not None else None
        bot = (
            (conv.bots[0] if conv is not None and conv.bots else None)
            or (unit.payload.get("bot") if unit else None)
            or j.meta.get("bot")
        )
        v = j.value if isinstance(j.value, dict) else None
        if bot is None or v is None:
            bad += 1
            continue
        if j.elapsed_s is not None:
            key = (cid, bot, j.annotator_id)
            times[key] = times.get(key, 0.0) + float(j.elapsed_s)
        if j.question == "turn":
            if v.get("turn") is None:
                bad += 1
                continue
            trows.append(
                {
                    "conversation": cid,
                    "bot": bot,
                    "annotator": j.annotator_id,
                    "turn": int(v["turn"]),
                    **{k: float(bool(v.get(k))) for k in q},
                }
            )
        elif j.question == "dialog":
            if any(v.get(k) is None for k in q):
                bad += 1
                continue
            drows.append({"conversation": cid, "bot": bot, "annotator": j.annotator_id, **{k: float(v[k]) for k in q}})
    summary["malformed_judgments"] = bad
    turns = pd.DataFrame(trows, columns=["conversation", "bot", "annotator", "turn", *q])
    dialog = pd.DataFrame(drows, columns=["conversation", "bot", "annotator", *q])
    timing = pd.DataFrame(
        [{"conversation": c, "bot": b, "annotator": a, "seconds": s} for (c, b, a), s in times.items()],
        columns=["conversation", "bot", "annotator", "seconds"],
    )
    return turns, dialog, timing, onboarding, summary


def _by_bot(frame: pd.DataFrame, value: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for r in frame.itertuples(index=False):
        out.setdefault(r.bot, {})[r.quality] = getattr(r, value)
    for d in out.values():
        d["mean"] = float(np.mean([d[k] for k in SM_QUALITIES if k in d]))
    return out


def analyze_single_model(
    dataset: Dataset,
    turn_range: tuple[int, int] = (3, 6),
    exclude_annotators: Iterable[str] | None = None,
    weights: Sequence[tuple[float, float]] = DEFAULT_WEIGHTS,
    n_boot: int = 10000,
    n_sim: int = 500,
    seed: int | None = 0,
) -> dict[str, Any]:
    """SM-Turn / SM-Dialog report.

    Keys: method, turn_range, systems [{name, n, score, success_rate, success_rate_subset, wta,
    likert, likert_mean, conversations}] best first (score = mean SM-Dialog Likert over the
    qualities, or the SM-Turn success rate in range when there is no Likert rating); ttests (every bot
    pair, per quality and mean: Likert per conversation and SM-Turn
    success rate per conversation in range); effective_win_rates (bootstrap, per pair: SM-Dialog
    Likert and SM-Turn WTA in range, per quality and mean); ols (Likert on per-turn ratings, all
    bots pooled and per bot); combined (Appendix G: per pair and weight, mean combined score per
    bot and t-test); time_to_significance (t-test based, per pair, when timings exist); excluded.
    """
    q = list(SM_QUALITIES)
    turns, dialog, timing, onboarding, excluded = single_model_frames(dataset, exclude_annotators)
    report: dict[str, Any] = {"method": "single-model", "turn_range": list(turn_range), "excluded": excluded}
    bots = sorted(set(turns["bot"]) | set(dialog["bot"]))
    if not bots:
        report.update(
            {
                "systems": [],
                "ttests": [],
                "effective_win_rates": [],
                "ols": {},
                "combined": [],
                "time_to_significance": [],
            }
        )
        jsonable: dict[str, Any] = to_jsonable(report)
        return jsonable

    rate_all = _by_bot(smstats.turn_success_rates(turns), "rate") if len(turns) else {}
    rate_sub = _by_bot(smstats.turn_success_rates(turns, turn_range), "rate") if len(turns) else {}
    wta = _by_bot(smstats.turn_wta(turns, turn_range), "wta") if len(turns) else {}
    lik = smstats.likert_summary(dialog) if len(dialog) else pd.DataFrame(columns=["bot", "quality", "n", "mean", "sd"])
    per_conv_lik = dialog.assign(mean=dialog[q].mean(axis=1)) if len(dialog) else dialog.assign(mean=[])
    systems = []
    for b in bots:
        lb = lik[lik["bot"] == b]
        likert = {r.quality: {"mean": r.mean, "sd": r.sd, "n": r.n} for r in lb.itertuples()}
        lmean = per_conv_lik.loc[per_conv_lik["bot"] == b, "mean"]
        conv_ids = set(turns.loc[turns["bot"] == b, "conversation"]) | set(
            dialog.loc[dialog["bot"] == b, "conversation"]
        )
        systems.append(
            {
                "name": b,
                "n": len(conv_ids),
                # SM-Dialog Likert mean; without Likert ratings, the SM-Turn success rate in range
                "score": float(lmean.mean()) if len(lmean) else rate_sub.get(b, {}).get("mean"),
                "score_kind": "likert_mean" if len(lmean) else "turn_success_rate_subset",
                "conversations": len(conv_ids),
                "rated_turns": int((turns["bot"] == b).sum()),
                "success_rate": rate_all.get(b, {}),
                "success_rate_subset": rate_sub.get(b, {}),
                "wta": wta.get(b, {}),
                "likert": likert,
                "likert_mean": {
                    "mean": float(lmean.mean()) if len(lmean) else None,
                    "sd": float(lmean.std(ddof=1)) if len(lmean) > 1 else None,
                },
            }
        )
    systems.sort(key=lambda s: (-(s["score"] if s["score"] is not None else -np.inf), s["name"]))
    bots = [s["name"] for s in systems]  # pairs below list the better-scored bot first

    # per-conversation metric frames
    rate_conv = smstats.conversation_turn_scores(turns, turn_range, "rate") if len(turns) else None
    wta_conv = smstats.conversation_turn_scores(turns, turn_range, "wta") if len(turns) else None
    ttests = []
    if len(dialog):
        t = smstats.pairwise_ttests(
            per_conv_lik.rename(columns={k: f"likert_{k}" for k in q + ["mean"]}),
            [f"likert_{k}" for k in q + ["mean"]],
            order=bots,
        )
        ttests.append(t)
    if rate_conv is not None and len(rate_conv):
        rc = rate_conv.assign(mean=rate_conv[q].mean(axis=1)).rename(
            columns={k: f"turn_rate_{k}" for k in q + ["mean"]}
        )
        ttests.append(smstats.pairwise_ttests(rc, [f"turn_rate_{k}" for k in q + ["mean"]], order=bots))
    ttests_df = pd.concat(ttests, ignore_index=True) if ttests else pd.DataFrame()

    ewr = []
    for a, b in combinations(bots, 2):
        for metric, frame in (
            ("sm_dialog", per_conv_lik if len(dialog) else None),
            ("sm_turn_wta", wta_conv.assign(mean=wta_conv[q].mean(axis=1)) if wta_conv is not None else None),
        ):
            if frame is None:
                continue
            for k in q + ["mean"]:
                x = frame.loc[frame["bot"] == a, k].to_numpy(dtype=float)
                y = frame.loc[frame["bot"] == b, k].to_numpy(dtype=float)
                if x.size and y.size:
                    r = smstats.effective_win_rate(x, y, n_boot=n_boot, seed=seed)
                    ewr.append({"a": a, "b": b, "metric": metric, "quality": k, **r})

    ols: dict[str, Any] = {}
    if len(turns) and len(dialog):
        ols["all"] = smstats.ols_turn_coefficients(turns, dialog)
        for b in bots:
            ols[b] = smstats.ols_turn_coefficients(turns[turns["bot"] == b], dialog[dialog["bot"] == b])

    combined = []
    comb_frames: dict[tuple[float, float], pd.DataFrame] = {}
    if len(turns) and len(dialog):
        for wt, wd in weights:
            comb = smstats.combine_scores(turns, dialog, wt, wd, turn_range)
            comb_frames[(wt, wd)] = comb
            means = comb.groupby("bot")["mean"].mean().to_dict()
            for a, b in combinations(bots, 2):
                r = smstats.ttest(comb.loc[comb["bot"] == a, "mean"], comb.loc[comb["bot"] == b, "mean"])
                combined.append(
                    {
                        "weight_turn": wt,
                        "weight_dialog": wd,
                        "a": a,
                        "b": b,
                        "mean_a": means.get(a),
                        "mean_b": means.get(b),
                        "t": r["t"],
                        "p": r["p"],
                        "stars": r["stars"],
                    }
                )

    tts = _time_to_significance(bots, turns, per_conv_lik, timing, comb_frames, turn_range, onboarding, n_sim, seed)
    report.update(
        {
            "systems": systems,
            "ttests": ttests_df,
            "effective_win_rates": ewr,
            "ols": ols,
            "combined": combined,
            "time_to_significance": tts,
            "onboarding_seconds": mean_onboarding_seconds(onboarding),
        }
    )
    report["annotator_model"] = _annotator_model(dataset, turns, seed or 0)
    from ...analysis.metrics import metric_report

    if (metrics := metric_report(dataset, report)) is not None:
        report["automatic_metrics"] = metrics
    jsonable = to_jsonable(report)
    return jsonable


def _annotator_model(dataset: Dataset, turns: pd.DataFrame, seed: int) -> dict[str, Any]:
    """Dawid-Skene and MACE (analysis/annotators.py) per SM-Turn quality: the item is a bot turn of
    a conversation, the label whether the quality was ticked. SM-Dialog's Likert ratings are
    ordinal scores, left to the t-tests."""
    from dialeval.analysis.annotators import annotator_options, label_section, model_judges

    if not annotator_options(dataset.meta.get("config")).get("models", True):
        return {"note": "annotator models off (annotators.models: false in the study file)"}
    judges = model_judges(dataset)
    out: dict[str, Any] = {}
    for quality in SM_QUALITIES:
        if turns.empty:
            break
        rows = pd.DataFrame(
            {
                "item": turns["conversation"].astype(str) + " / turn " + turns["turn"].astype(str),
                "annotator": turns["annotator"],
                "label": np.where(turns[quality] > 0, "ticked", "not ticked"),
            }
        )
        if (section := label_section(rows, judges=judges, classes=["not ticked", "ticked"], seed=seed)) is not None:
            out[quality] = section
    return {"turn_qualities": out} if out else {"note": "too few annotators of SM-Turn for an annotator model"}


def _time_to_significance(
    bots: list[str],
    turns: pd.DataFrame,
    per_conv_lik: pd.DataFrame,
    timing: pd.DataFrame,
    comb_frames: dict[tuple[float, float], pd.DataFrame],
    turn_range: tuple[int, int],
    onboarding: list[Judgment],
    n_sim: int,
    seed: int | None,
) -> list[dict[str, Any]]:
    if timing.empty:
        return []
    q = list(SM_QUALITIES)
    sec_conv = float(timing["seconds"].mean())
    onboarding_s = mean_onboarding_seconds(onboarding)
    per_annotator = len(timing) / max(timing["annotator"].nunique(), 1)
    ranged = turns[(turns["turn"] >= turn_range[0]) & (turns["turn"] <= turn_range[1])]
    turns_per_conv = ranged.groupby("conversation").size().mean() if len(ranged) else np.nan
    out = []

    def add(a: str, b: str, metric: str, x: np.ndarray, y: np.ndarray, seconds: float, per_ann: float) -> None:
        if len(x) < 2 or len(y) < 2 or not np.isfinite(seconds):
            return
        r = single_model_time_to_significance(
            x,
            y,
            seconds_per_judgment=seconds,
            onboarding_seconds=onboarding_s,
            judgments_per_annotator=max(per_ann, 1.0),
            n_sim=n_sim,
            seed=seed,
        )
        r["curve"] = to_jsonable(r["curve"])
        out.append({"a": a, "b": b, "metric": metric, **r})

    for a, b in combinations(bots, 2):
        if len(per_conv_lik):
            add(
                a,
                b,
                "sm_dialog",
                per_conv_lik.loc[per_conv_lik["bot"] == a, "mean"].to_numpy(),
                per_conv_lik.loc[per_conv_lik["bot"] == b, "mean"].to_numpy(),
                sec_conv,
                per_annotator,
            )
        if len(ranged) and np.isfinite(turns_per_conv):
            # Appendix F: each rated turn in range is one sample; a turn costs its share of the conversation
            xs = ranged.loc[ranged["bot"] == a, q].mean(axis=1).to_numpy()
            ys = ranged.loc[ranged["bot"] == b, q].mean(axis=1).to_numpy()
            add(a, b, "sm_turn", xs, ys, sec_conv / turns_per_conv, per_annotator * turns_per_conv)
        for (wt, wd), comb in comb_frames.items():
            if wt and wd:
                add(
                    a,
                    b,
                    f"combined_{wt:g}:{wd:g}",
                    comb.loc[comb["bot"] == a, "mean"].to_numpy(),
                    comb.loc[comb["bot"] == b, "mean"].to_numpy(),
                    sec_conv,
                    per_annotator,
                )
    return out
