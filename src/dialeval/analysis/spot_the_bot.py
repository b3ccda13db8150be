"""Analyse a Spot The Bot data set (paper 001) into the JSON report contract.

Entry point: :func:`analyze_spot_the_bot`. The frames it builds are public too:

- :func:`annotation_frame`: one row per annotated segment (the input of :mod:`dialeval.stats.spot_the_bot`);
- :func:`survival_frame`: one row per (annotation, entity): the interval (lower, upper] of the
  "spotted" event in exchanges and the feature covariates of that entity.

Survival (Turnbull curves, generalized log-rank test, Cox models) comes from
``dialeval.stats.survival`` when it is importable; otherwise those parts stay empty with a note.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dialeval.analysis.practice import is_practice
from dialeval.jsonable import to_jsonable
from dialeval.records import STB_FEATURES, Dataset
from dialeval.stats import ranking
from dialeval.stats import spot_the_bot as stb
from dialeval.stats.power import pairwise_time_to_significance

from .metrics import metric_report

HUMAN = "human"
# conversations per pair for the subsampling stability (paper 001: 3 ... 44 of 45 per pair)
STABILITY_SIZES = (3, 5, 10, 20, 30, 44)


def _ranking_words(key: str) -> str:
    """A ranking of clusters (the repr key of stats.subsample_stability) in words: 'a, b > c'."""
    import ast

    try:
        clusters = ast.literal_eval(key)
    except (ValueError, SyntaxError):
        return str(key)
    return " > ".join(", ".join(str(x) for x in c) if isinstance(c, (list, tuple)) else str(c) for c in clusters)


def annotation_frame(dataset: Dataset) -> pd.DataFrame:
    """One row per spot-the-bot judgment: ``annotation_id, annotator, conversation_id, package_id,
    exchanges, system0, system1, label0, label1, fluency, sensibleness, specificity, elapsed_s,
    bot_bot`` (``bot_bot``: neither entity is a person)."""
    conversations = dataset.conversation_map()
    units = {u.id: u for u in dataset.units}
    rows = []
    for j in dataset.judgments:
        v = j.value
        if is_practice(j, units.get(j.unit_id)) or not isinstance(v, dict) or "entity0" not in v:
            continue
        conv = conversations.get(j.conversation_id)
        if conv is None:
            bots = list(j.shown_order or [None, None])
        else:
            bots = list(conv.bots)
        rows.append(
            {
                "annotation_id": j.meta.get("annotation_id"),
                "annotator": j.annotator_id,
                "conversation_id": j.conversation_id,
                "package_id": j.meta.get("package_id", j.unit_id),
                "exchanges": v.get("segment_exchanges"),
                "system0": bots[0],
                "system1": bots[1],
                "label0": v["entity0"],
                "label1": v["entity1"],
                **{f: v.get(f) for f in STB_FEATURES},
                "elapsed_s": j.elapsed_s,
            }
        )
    columns = [
        "annotation_id",
        "annotator",
        "conversation_id",
        "package_id",
        "exchanges",
        "system0",
        "system1",
        "label0",
        "label1",
        *STB_FEATURES,
        "elapsed_s",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    frame["bot_bot"] = (frame["system0"] != HUMAN) & (frame["system1"] != HUMAN)
    return frame


def _covariate(winner: Any, entity: int) -> int:
    """+1 if ``entity`` did better, -1 if worse, 0 for a tie (or no answer)."""
    if winner is None or isinstance(winner, (str, bool)) or (isinstance(winner, float) and math.isnan(winner)):
        return 0
    return 1 if int(winner) == entity else -1


def survival_frame(dataset: Dataset | pd.DataFrame, include_human: bool = False) -> pd.DataFrame:
    """One row per (annotation, entity): ``system, lower, upper, fluency, sensibleness, specificity,
    spotted, exchanges, label, conversation_id, annotator``.

    With k the segment length in exchanges: labelled "bot" => spotted, the event happened in
    (0, k] (``lower = 0, upper = k``, interval-censored); "human"/"unsure" => survived at least k
    exchanges (``lower = k, upper = inf``, right-censored). Features: +1 the entity did better than
    the other, 0 tie, -1 worse. Entities that are people are left out unless ``include_human``.
    """
    frame = dataset if isinstance(dataset, pd.DataFrame) else annotation_frame(dataset)
    rows = []
    for rec in frame.itertuples(index=False):
        k = float(rec.exchanges)
        for e in (0, 1):
            system = getattr(rec, f"system{e}")
            if system == HUMAN and not include_human:
                continue
            label = getattr(rec, f"label{e}")
            spotted = label == "bot"
            rows.append(
                {
                    "system": system,
                    "lower": 0.0 if spotted else k,
                    "upper": k if spotted else math.inf,
                    **{f: _covariate(getattr(rec, f), e) for f in STB_FEATURES},
                    "spotted": bool(spotted),
                    "exchanges": int(rec.exchanges),
                    "label": label,
                    "conversation_id": rec.conversation_id,
                    "annotator": rec.annotator,
                }
            )
    columns = [
        "system",
        "lower",
        "upper",
        *STB_FEATURES,
        "spotted",
        "exchanges",
        "label",
        "conversation_id",
        "annotator",
    ]
    return pd.DataFrame(rows, columns=columns)


def _num(x: Any) -> Any:
    """A JSON-friendly number: numpy scalars to Python, NaN/inf to None."""
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return None if (math.isnan(x) or math.isinf(x)) else x
    return x


def ranking_matches(frame: pd.DataFrame, matches: str = "conversation") -> pd.DataFrame:
    """The matches that the ranking bootstraps: columns ``a, b, outcome, group``.

    ``"conversation"`` (default): one match per conversation (the released code's match for its
    ranking-significance analysis; see :func:`dialeval.stats.spot_the_bot.conversation_matches`),
    resampled as they are. ``"annotation"``: one match per annotated segment (the win function of
    Eq. 1), resampled in blocks of whole conversations because the segments and annotations of one
    conversation are not independent.
    """
    if matches == "conversation":
        m = stb.conversation_matches(frame)
        return m.assign(group=m["conversation_id"])[["a", "b", "outcome", "group"]]
    if matches == "annotation":
        m = stb.matches(frame)
        return m.assign(group=frame["conversation_id"].to_numpy()).reset_index(drop=True)
    raise ValueError(f"matches must be 'conversation' or 'annotation', got {matches!r}")


def _ranking_of(
    frame: pd.DataFrame, n_bootstrap: int, seed: int, statistic: str, n_samples: int | None, matches: str
) -> pd.DataFrame:
    m = ranking_matches(frame, matches)
    groups = m["group"] if matches == "annotation" else None
    return ranking.bootstrap_clusters(
        m["a"],
        m["b"],
        m["outcome"],
        n_bootstrap=n_bootstrap,
        seed=seed,
        statistic=statistic,
        n_samples=n_samples,
        groups=groups,
    )


def _cluster_fn(n_bootstrap: int, seed: int, statistic: str, n_samples: int | None, matches: str):
    def rank_fn(frame: pd.DataFrame) -> list[list[str]]:
        table = _ranking_of(frame, n_bootstrap, seed, statistic, n_samples, matches)
        return ranking.cluster_list(dict(zip(table["system"], table["cluster"])))

    return rank_fn


def _survival_parts(dataset_frame: pd.DataFrame) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        from dialeval.stats.survival import cox_features, pairwise_logrank, turnbull_curves
    except ImportError as exc:
        note = f"dialeval.stats.survival is not available ({exc}); survival analysis skipped"
        return {"curves": {}, "logrank": [], "note": note}, []
    surv = survival_frame(dataset_frame, include_human=True)
    survival: dict[str, Any] = {"curves": {}, "logrank": []}
    cox: list[dict[str, Any]] = []
    try:
        curves = turnbull_curves(surv[["system", "lower", "upper"]])
        survival["curves"] = {s: [[_num(k), _num(v)] for k, v in pts] for s, pts in curves.items()}
        lr = pairwise_logrank(surv[["system", "lower", "upper"]])
        survival["logrank"] = [
            {
                "a": r["a"],
                "b": r["b"],
                "statistic": _num(r.get("statistic")),
                "p": _num(r["p"]),
                "p_adjusted": _num(r["p_adjusted"]),
            }
            for r in lr.to_dict("records")
        ]
        bots = surv[surv["system"] != HUMAN]
        cf = cox_features(bots[["system", "lower", "upper", *STB_FEATURES]])
        cox = [
            {"system": r["system"], "feature": r["feature"], "coef": _num(r["coef"]), "p": _num(r["p"])}
            for r in cf.to_dict("records")
        ]
    except Exception as exc:  # noqa: BLE001 - a failing helper must not lose the rest of the report
        survival["note"] = f"survival analysis failed: {type(exc).__name__}: {exc}"
    return survival, cox


def analyze_spot_the_bot(
    dataset: Dataset,
    n_bootstrap: int = 1000,
    seed: int = 0,
    statistic: str = "mean_win_rate",
    matches: str = "conversation",
    n_samples: int | None = None,
    trueskill_shuffles: int = 5,
    survival: bool = True,
    stability: bool = True,
    stability_sizes: Sequence[int] = STABILITY_SIZES,
    stability_repeats: int = 10,
    stability_bootstrap: int | None = None,
    tts: bool = True,
    tts_n_sim: int = 1000,
) -> dict[str, Any]:
    """The Spot The Bot report of ``dataset`` as a JSON-ready dict (see the module docstring).

    Only bot–bot conversations enter the win rates and the ranking. ``win_rates`` and each
    system's ``score`` (mean pairwise win rate) count one match per annotated segment (Eq. 1, human >
    unsure > bot). Rank ranges and clusters come from a bootstrap of ``matches`` (see
    :func:`ranking_matches`; default one match per conversation) ranked by ``statistic``
    (``"mean_win_rate"``: the paper's score, default; ``"win_share"``: wins / matches, what the
    released code sorted by); ``n_samples`` draws per resample (default: as many as there are).
    TrueSkill uses the same matches. Systems are listed best first (cluster, then mean bootstrap rank).

    ``stability`` (paper 001 "On Reliability"): ``leave_one_out`` and ``subsample``: for each k of
    ``stability_sizes`` (capped at the most conversations any pair has), ``stability_repeats`` draws of
    k conversations per pair (seeded), each clustered as the full data is (``stability_bootstrap``
    bootstrap repetitions, default ``n_bootstrap``); ``reference_share`` = share of draws giving the
    full-data clustering, ``modal_share`` = share giving the draw's most frequent clustering.
    ``feature_win_rates``: per-feature win rates (paper Table 2), see :func:`feature_win_rates_report`.
    ``time_to_significance``: see :func:`time_to_significance` (``tts=False`` skips it).
    ``automatic_metrics``: only when bot turns carry references (:mod:`dialeval.analysis.metrics`).
    """
    frame = annotation_frame(dataset)
    bots = frame[frame["bot_bot"]].reset_index(drop=True)
    report: dict[str, Any] = {
        "method": "spot-the-bot",
        "domain": dataset.meta.get("domain"),
        "n_annotations": len(frame),
        "n_bot_bot_annotations": len(bots),
        "settings": {
            "n_bootstrap": n_bootstrap,
            "seed": seed,
            "statistic": statistic,
            "matches": matches,
            "n_samples": n_samples,
            "coverage": 0.995,
            "trueskill_shuffles": trueskill_shuffles,
        },
    }
    wr = stb.pairwise_win_rates(bots)
    scores = stb.system_scores(wr)
    report["win_rates"] = [
        {
            "a": r["a"],
            "b": r["b"],
            "wins": int(r["wins"]),
            "losses": int(r["losses"]),
            "draws": int(r["draws"]),
            "win_rate": _num(r["win_rate"]),
            "p": _num(r["p"]),
        }
        for r in wr.to_dict("records")
    ]
    systems_out: list[dict[str, Any]] = []
    if len(bots):
        table = _ranking_of(bots, n_bootstrap, seed, statistic, n_samples, matches)
        m = ranking_matches(bots, matches)
        ts = ranking.trueskill_ratings(m["a"], m["b"], m["outcome"], n_shuffles=trueskill_shuffles, seed=seed)
        ts_mu = dict(zip(ts["system"], ts["mu"]))
        played = pd.concat([bots["system0"], bots["system1"]]).value_counts()
        convs = bots.drop_duplicates("conversation_id")
        played_conv = pd.concat([convs["system0"], convs["system1"]]).value_counts()
        for r in table.to_dict("records"):
            s = r["system"]
            systems_out.append(
                {
                    "name": s,
                    "n": int(played.get(s, 0)),
                    "n_conversations": int(played_conv.get(s, 0)),
                    "score": _num(scores.get(s, float("nan"))),
                    "rank_range": [int(r["lo"]), int(r["hi"])],
                    "cluster": int(r["cluster"]),
                    "mean_rank": _num(r["mean_rank"]),
                    "trueskill": _num(ts_mu.get(s)),
                }
            )
        report["clusters"] = ranking.cluster_list(dict(zip(table["system"], table["cluster"])))
    else:
        report["clusters"] = []
    report["systems"] = systems_out

    if survival:
        report["survival"], report["cox"] = _survival_parts(frame)
    else:
        report["survival"], report["cox"] = {"curves": {}, "logrank": [], "note": "not requested"}, []

    agreement = stb.label_agreement(frame)
    report["agreement"] = [
        {"system": r["system"], "label": r["label"], "agreement": _num(r["agreement"]), "n": int(r["n"])}
        for r in agreement.to_dict("records")
    ]
    report["feature_alpha"] = {k: _num(v) for k, v in stb.feature_alpha(bots).items()}
    report["time"] = {k: _num(v) for k, v in stb.time_summary(frame["elapsed_s"]).items()}
    if stability and len(bots):
        loo = stb.leave_one_out(bots, _cluster_fn(n_bootstrap, seed, statistic, n_samples, matches))
        report["stability"] = {
            "leave_one_out": loo,
            "all_same": all(x["same"] for x in loo),
            **subsample_stability_report(
                bots,
                stability_sizes,
                stability_repeats,
                stability_bootstrap or n_bootstrap,
                seed,
                statistic,
                n_samples,
                matches,
                reference=report["clusters"],
            ),
        }
    else:
        report["stability"] = {"leave_one_out": [], "all_same": None, "subsample": []}
    report["feature_win_rates"] = feature_win_rates_report(bots)
    report["time_to_significance"] = time_to_significance(frame, n_sim=tts_n_sim, seed=seed) if tts else []
    metrics = metric_report(dataset, report)
    if metrics is not None:
        report["automatic_metrics"] = metrics
    return report


def subsample_stability_report(
    bots: pd.DataFrame,
    sizes: Sequence[int] = STABILITY_SIZES,
    n_repeats: int = 50,
    n_bootstrap: int = 1000,
    seed: int = 0,
    statistic: str = "mean_win_rate",
    n_samples: int | None = None,
    matches: str = "conversation",
    reference: list[list[str]] | None = None,
) -> dict[str, Any]:
    """Subsampling stability of the clustering of the bot–bot frame ``bots`` (see
    :func:`analyze_spot_the_bot`): ``{"reference": full-data clusters, "conversations_per_pair":
    {min, max}, "subsample": [{k, reference_share, modal_share, n_rankings, modal}]}``.
    ``reference``: the full-data clustering already computed (the report's), else computed here."""
    rank_fn = _cluster_fn(n_bootstrap, seed, statistic, n_samples, matches)
    if reference is None:
        reference = rank_fn(bots)
    pairs = [tuple(sorted(p)) for p in zip(bots["system0"], bots["system1"])]
    per_pair = bots.assign(pair=pairs).drop_duplicates("conversation_id")["pair"].value_counts()
    cap = int(per_pair.max()) if len(per_pair) else 0
    ks = sorted({min(int(k), cap) for k in sizes if int(k) >= 1})
    table = stb.subsample_stability(bots, ks, rank_fn, n_repeats=n_repeats, seed=seed, reference=reference)
    rows = [
        {
            "k": int(r["k"]),
            "reference_share": _num(r["reference_share"]),
            "modal_share": _num(r["modal_share"]),
            "n_rankings": int(r["n_rankings"]),
            "modal": _ranking_words(r["modal"]),
        }
        for r in table.to_dict("records")
    ]
    return {
        "reference": [sorted(c) for c in reference],
        "n_repeats": n_repeats,
        "n_bootstrap": n_bootstrap,
        "conversations_per_pair": {"min": int(per_pair.min()) if cap else 0, "max": cap},
        "subsample": rows,
    }


def feature_win_rates_report(bots: pd.DataFrame) -> dict[str, Any]:
    """Per-feature win rates of the bot–bot frame ``bots`` (paper 001 Table 2): ``{"systems":
    [{name, fluency, sensibleness, specificity}] (mean pairwise feature win rate), "pairwise":
    [{feature, a, b, wins, losses, draws, win_rate, p}]}`` (chi-square p as for ``win_rates``)."""
    if bots.empty:
        return {"systems": [], "pairwise": []}
    pairwise, systems = stb.feature_win_rates(bots, STB_FEATURES)
    return {
        "systems": [{"name": name, **{f: _num(row[f]) for f in STB_FEATURES}} for name, row in systems.iterrows()],
        "pairwise": [
            {
                "feature": r["feature"],
                "a": r["a"],
                "b": r["b"],
                "wins": int(r["wins"]),
                "losses": int(r["losses"]),
                "draws": int(r["draws"]),
                "win_rate": _num(r["win_rate"]),
                "p": _num(r["p"]),
            }
            for r in pairwise.to_dict("records")
        ],
    }


def time_to_significance(
    frame: pd.DataFrame, n_sim: int = 1000, seed: int | None = 0, power: float = 0.8, n_max: int = 100_000
) -> list[dict[str, Any]]:
    """Per pair of bots that met (``a`` = the one with the higher win rate): annotations and
    annotator-hours until the pair's test gives p < 0.05 with probability ``power``, from the
    pair's collected outcomes (win 1, loss 0, draw 0.5; one per annotated segment, as ``win_rates``)
    by :func:`dialeval.stats.power.pairwise_time_to_significance`: two-sided binomial test on the
    decisive outcomes (draws cost time but do not count), closed form (``n_needed``) and resampling
    (``n_needed_sim``; the curve's ``p_significant``). Annotations are treated as independent.

    ``frame`` is the whole annotation frame. Seconds per bot–bot annotation = mean seconds per
    annotation (annotations over 10 minutes left out as idle) × all annotations / bot–bot
    annotations, so the human–human segments mixed into every package are paid for. Empty without
    ``elapsed_s``. Curve points (resampled sizes only): ``{n, power, power_sim, hours, p_significant}``.
    """
    bots = frame[frame["bot_bot"]]
    timing = stb.time_summary(frame["elapsed_s"])
    sec = timing["mean_s_under_10min"]
    if bots.empty or not timing["n"] or not np.isfinite(sec):
        return []
    overhead = len(frame) / len(bots)
    per_annotator = len(frame) / max(frame["annotator"].nunique(), 1)
    m = stb.matches(bots)
    pair = [tuple(sorted((a, b))) for a, b in zip(m["a"], m["b"])]
    m = m.assign(pair=pair)
    out = []
    for (x, y), g in m.groupby("pair", sort=True):
        if x == y:
            continue
        x_wins = ((g["a"] == x) & (g["outcome"] == 1)) | ((g["b"] == x) & (g["outcome"] == -1))
        y_wins = ((g["a"] == y) & (g["outcome"] == 1)) | ((g["b"] == y) & (g["outcome"] == -1))
        outcomes = np.where(x_wins, 1.0, np.where(y_wins, 0.0, 0.5))
        a, b = x, y
        if int(x_wins.sum()) < int(y_wins.sum()):
            a, b, outcomes = y, x, np.where(outcomes == 0.5, 0.5, 1.0 - outcomes)
        r = pairwise_time_to_significance(
            outcomes=outcomes,
            seconds_per_judgment=sec * overhead,
            judgments_per_annotator=per_annotator,
            power=power,
            n_max=n_max,
            n_sim=n_sim,
            seed=seed,
        )
        curve = r.pop("curve")
        curve = curve[curve["power_sim"].notna()].assign(p_significant=lambda c: c["power_sim"])
        out.append({"a": a, "b": b, **r, "n_collected": len(g), "overhead": overhead, "curve": curve})
    return to_jsonable(out)
