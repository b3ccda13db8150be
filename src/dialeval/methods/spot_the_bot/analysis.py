"""Analyse a Spot The Bot data set (Deriu et al. 2020) into the JSON report contract.

Entry point: :func:`analyze_spot_the_bot`. The frames it builds are public too:

- :func:`annotation_frame`: one row per annotated segment (the input of :mod:`dialeval.stats.spot_the_bot`);
- :func:`survival_frame`: one row per (annotation, entity): the interval (lower, upper] of the
  "spotted" event in exchanges and the feature covariates of that entity.

Survival (Turnbull curves, generalized log-rank test, Cox models) comes from
``dialeval.stats.survival``; an error there raises (it is never turned into a note). A Cox row
whose coefficient could not be estimated carries the documented reason in ``note``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dialeval.analysis.practice import is_practice
from dialeval.jsonable import to_jsonable
from dialeval.records import STB_FEATURES, Dataset, Unit
from dialeval.stats import ranking
from dialeval.stats import spot_the_bot as stb
from dialeval.stats.power import pairwise_time_to_significance

from ...analysis.metrics import metric_report

HUMAN = "human"
# conversations per pair for the subsampling stability (Deriu et al. 2020: 3 ... 44 of 45 per pair)
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
    # keyed by str | None: a judgment without a unit finds none
    units: dict[str | None, Unit] = {u.id: u for u in dataset.units}
    rows = []
    for j in dataset.judgments:
        v = j.value
        if is_practice(j, units.get(j.unit_id)) or not isinstance(v, dict) or "entity0" not in v:
            continue
        conv = conversations.get(j.conversation_id) if j.conversation_id is not None else None
        bots: list[str | None]
        if conv is None:
            bots = list(j.shown_order) if j.shown_order else [None, None]
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
    if frame.empty or frame["exchanges"].isna().any():
        return _survival_frame_by_rows(frame, include_human, columns)
    # column by column: entity 0 and 1 of each annotation side by side, then interleaved (the
    # order of a loop over annotations then entities) and the people left out unless asked for
    k = frame["exchanges"].to_numpy(dtype=float)
    n = len(frame)

    def both(values: Callable[[int], np.ndarray]) -> np.ndarray:
        return np.stack([values(0), values(1)], axis=1).reshape(2 * n)

    system = both(lambda e: frame[f"system{e}"].to_numpy(dtype=object))
    label = both(lambda e: frame[f"label{e}"].to_numpy(dtype=object))
    spotted = np.asarray(label == "bot", dtype=bool)
    kk = np.repeat(k, 2)
    out: dict[str, Any] = {
        "system": system,
        "lower": np.where(spotted, 0.0, kk),
        "upper": np.where(spotted, kk, math.inf),
    }
    for f in STB_FEATURES:
        winners = frame[f].to_numpy(dtype=object)
        out[f] = np.stack([_covariates(winners, 0), _covariates(winners, 1)], axis=1).reshape(2 * n)
    out["spotted"] = spotted
    out["exchanges"] = np.repeat(frame["exchanges"].to_numpy().astype(int), 2)
    out["label"] = label
    out["conversation_id"] = np.repeat(frame["conversation_id"].to_numpy(dtype=object), 2)
    out["annotator"] = np.repeat(frame["annotator"].to_numpy(dtype=object), 2)
    keep = np.ones(2 * n, dtype=bool) if include_human else np.asarray(system != HUMAN, dtype=bool)
    return pd.DataFrame({c: out[c][keep] for c in columns}, columns=columns)


def _covariates(winners: np.ndarray, entity: int) -> np.ndarray:
    """_covariate of each value, computed once per distinct value (keyed with its type, so 1, 1.0
    and True stay apart)."""
    seen: dict[tuple[type, Any], int] = {}
    out = np.empty(len(winners), dtype=np.int64)
    for j, w in enumerate(winners):
        key = (type(w), w)
        c = seen.get(key)
        if c is None:
            c = seen[key] = _covariate(w, entity)
        out[j] = c
    return out


def _survival_frame_by_rows(frame: pd.DataFrame, include_human: bool, columns: list[str]) -> pd.DataFrame:
    """survival_frame one annotation at a time: for an empty frame, or segment lengths missing
    (which raise here as they always did)."""
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
    return pd.DataFrame(rows, columns=columns)


# The released Table 1 procedure (``segmented_bootstrap_sampling.py`` of jderiu/spot-the-bot-code,
# its ``__main__``: naive=True, bootstrap_sampling(rep=1000, n_samples=5000), compute_rank_range
# with p = int(rep * 0.995)): one match per annotation, 1000 resamples of 5000 matches drawn with
# replacement, systems ranked by win share (wins / matches played, draws played), the released
# rank-range rule (see dialeval.stats.ranking), overlapping ranges clustered.
RELEASED_MATCHES = "annotation"
RELEASED_N_BOOTSTRAP = 1000
RELEASED_N_SAMPLES: int | None = 5000
RELEASED_STATISTIC: ranking.Statistic = "win_share"
RELEASED_RANK_RANGE: ranking.RankRangeRule = "released"
RELEASED: dict[str, Any] = {
    "matches": RELEASED_MATCHES,
    "n_bootstrap": RELEASED_N_BOOTSTRAP,
    "n_samples": RELEASED_N_SAMPLES,
    "statistic": RELEASED_STATISTIC,
    "rank_range": RELEASED_RANK_RANGE,
}
MATCHES = ("annotation", "annotation-blocks", "conversation")
SEED_STABILITY_SEEDS = 20


def ranking_matches(frame: pd.DataFrame, matches: str = "annotation") -> pd.DataFrame:
    """The matches that the ranking bootstraps: columns ``a, b, outcome, group``.

    ``"annotation"`` (default, the released Table 1 procedure): one match per annotated segment (the
    win function of Eq. 1), each drawn on its own (``group`` None). ``"annotation-blocks"``: the
    same matches resampled in blocks of whole conversations, because the segments and annotations
    of one conversation are not independent (``group`` = conversation). ``"conversation"``: one
    match per conversation (the released code's match for its stability analysis; see
    :func:`dialeval.stats.spot_the_bot.conversation_matches`), resampled as they are.
    """
    if matches == "conversation":
        m = stb.conversation_matches(frame)
        return m.assign(group=None)[["a", "b", "outcome", "group"]]
    if matches in ("annotation", "annotation-blocks"):
        m = stb.matches(frame).reset_index(drop=True)
        group = frame["conversation_id"].to_numpy() if matches == "annotation-blocks" else None
        return m.assign(group=group)
    raise ValueError(f"matches must be one of {MATCHES}, got {matches!r}")


def row_outcomes(bots: pd.DataFrame, matches: str = "annotation") -> pd.Series | None:
    """The win outcome of each row of ``bots`` (stats.spot_the_bot.win_outcomes), by its index label:
    what the per-annotation matches of ``bots`` and of any frame of its rows read, so the bootstrap
    seeds, left-out systems and subsamples do not recompute it. None for per-conversation matches."""
    if matches not in ("annotation", "annotation-blocks") or not bots.index.is_unique:
        return None
    return pd.Series(stb.win_outcomes(bots["label0"], bots["label1"]), index=bots.index)


def _matches_of(frame: pd.DataFrame, matches: str, outcomes: pd.Series | None) -> pd.DataFrame:
    """ranking_matches(frame, matches), the outcomes read from ``outcomes`` (row_outcomes of a frame
    whose rows ``frame`` holds) when given and the matches are per annotation."""
    if outcomes is None or matches not in ("annotation", "annotation-blocks"):
        return ranking_matches(frame, matches)
    m = pd.DataFrame(
        {
            "a": frame["system0"].to_numpy(),
            "b": frame["system1"].to_numpy(),
            "outcome": outcomes.loc[frame.index].to_numpy(),
        }
    )
    group = frame["conversation_id"].to_numpy() if matches == "annotation-blocks" else None
    return m.assign(group=group)


def _ranking_of(
    frame: pd.DataFrame,
    n_bootstrap: int,
    seed: int,
    statistic: ranking.Statistic,
    n_samples: int | None,
    matches: str,
    rank_range: ranking.RankRangeRule = "released",
    outcomes: pd.Series | None = None,
) -> pd.DataFrame:
    m = _matches_of(frame, matches, outcomes)
    groups = m["group"] if matches == "annotation-blocks" else None
    return ranking.bootstrap_clusters(
        m["a"],
        m["b"],
        m["outcome"],
        n_bootstrap=n_bootstrap,
        seed=seed,
        statistic=statistic,
        n_samples=n_samples,
        groups=groups,
        rank_range_rule=rank_range,
    )


def _cluster_fn(
    n_bootstrap: int,
    seed: int,
    statistic: ranking.Statistic,
    n_samples: int | None,
    matches: str,
    rank_range: ranking.RankRangeRule = "released",
    outcomes: pd.Series | None = None,
) -> Callable[[pd.DataFrame], list[list[str]]]:
    """The clustering of a frame; with ``outcomes`` (row_outcomes), of frames of those rows only."""

    def rank_fn(frame: pd.DataFrame) -> list[list[str]]:
        table = _ranking_of(frame, n_bootstrap, seed, statistic, n_samples, matches, rank_range, outcomes)
        return ranking.cluster_list(dict(zip(table["system"], table["cluster"])))

    return rank_fn


def seed_stability(
    bots: pd.DataFrame,
    reported: list[list[str]],
    seeds: Sequence[int] = tuple(range(SEED_STABILITY_SEEDS)),
    n_bootstrap: int = RELEASED_N_BOOTSTRAP,
    statistic: ranking.Statistic = RELEASED_STATISTIC,
    n_samples: int | None = RELEASED_N_SAMPLES,
    matches: str = RELEASED_MATCHES,
    rank_range: ranking.RankRangeRule = RELEASED_RANK_RANGE,
    outcomes: pd.Series | None = None,
) -> dict[str, Any]:
    """How firm the reported clusters are: the clustering redone with each bootstrap seed of ``seeds``
    (default 0..19) on the same data and settings.

    ``{"seeds": n, "share": share of seeds giving exactly ``reported``, "clusterings": [{"clusters",
    "share"}] (most frequent first), "cluster_share": {system: share of seeds in which that
    system's reported cluster (the same members) is a cluster}}``. ``outcomes``: row_outcomes(bots)
    when already computed.
    """
    if outcomes is None:
        outcomes = row_outcomes(bots, matches)

    def rank_fn_of(seed: int) -> Callable[[pd.DataFrame], list[list[str]]]:
        return _cluster_fn(n_bootstrap, seed, statistic, n_samples, matches, rank_range, outcomes)

    seen: dict[str, int] = {}
    found: dict[str, list[list[str]]] = {}
    member_hits: dict[str, int] = {s: 0 for c in reported for s in c}
    wanted = {frozenset(c) for c in reported}
    for seed in seeds:
        got = rank_fn_of(int(seed))(bots)
        key = repr(got)
        seen[key] = seen.get(key, 0) + 1
        found[key] = got
        present = {frozenset(c) for c in got} & wanted
        for c in present:
            for s in c:
                member_hits[s] += 1
    n = len(seeds)
    clusterings = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "seeds": n,
        "share": seen.get(repr([sorted(c) for c in reported]), 0) / n if n else None,
        "clusterings": [{"clusters": found[k], "share": v / n} for k, v in clusterings],
        "cluster_share": {s: member_hits[s] / n for s in sorted(member_hits)} if n else {},
    }


def complete_packages(frame: pd.DataFrame, dataset: Dataset) -> pd.Series:
    """True for annotations whose annotator annotated every conversation of that package.

    The released scripts differ here: the Table 1 script (``segmented_bootstrap_sampling.py``,
    ``get_all_annotated_convos(apply_blacklist=False)``) kept the annotations of packages an
    annotator left unfinished; the stability script (``ranking_significance.py``) and the data for
    the R survival script (``analysis/extract_event_data.py``, ``fetch_segmented``) used the default
    ``apply_blacklist=True``, which drops every annotation of an (annotator, package) whose set of
    annotated conversations differs from the package's.
    """
    expected = {u.id: set(u.conversation_ids) for u in dataset.units}
    if frame.empty or not expected:
        return pd.Series(True, index=frame.index)
    done = frame.groupby(["annotator", "package_id"])["conversation_id"].agg(lambda c: set(c))
    complete = {key for key, convs in done.items() if key[1] not in expected or convs == expected[key[1]]}
    keys = list(zip(frame["annotator"], frame["package_id"]))
    return pd.Series([k in complete for k in keys], index=frame.index)


def _survival_parts(dataset_frame: pd.DataFrame) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    # local import: survival loads lifelines, which the rest of the report does not need.
    # No try/except: a failing survival analysis is a bug and must not ship as a note.
    from dialeval.stats.survival import cox_features, pairwise_logrank, turnbull_curves

    surv = survival_frame(dataset_frame, include_human=True)
    survival: dict[str, Any] = {"curves": {}, "logrank": []}
    curves = turnbull_curves(surv[["system", "lower", "upper"]])
    survival["curves"] = {s: [[to_jsonable(k), to_jsonable(v)] for k, v in pts] for s, pts in curves.items()}
    lr = pairwise_logrank(surv[["system", "lower", "upper"]])
    survival["logrank"] = [
        {
            "a": r["a"],
            "b": r["b"],
            "statistic": to_jsonable(r.get("statistic")),
            "p": to_jsonable(r["p"]),
            "p_adjusted": to_jsonable(r["p_adjusted"]),
        }
        for r in lr.to_dict("records")
    ]
    bots = surv[surv["system"] != HUMAN]
    cf = cox_features(bots[["system", "lower", "upper", *STB_FEATURES]])
    # `note` is cox_features' documented reason for a NaN coefficient (no spotted events, a
    # constant covariate, a fit that did not converge); empty when the fit is fine
    cox = [
        {
            "system": r["system"],
            "feature": r["feature"],
            "coef": to_jsonable(r["coef"]),
            "robust_se": to_jsonable(r["robust_se"]),
            "p": to_jsonable(r["p"]),
            "note": r["note"],
        }
        for r in cf.to_dict("records")
    ]
    return survival, cox


def analyze_spot_the_bot(
    dataset: Dataset,
    n_bootstrap: int = RELEASED_N_BOOTSTRAP,
    seed: int = 0,
    statistic: ranking.Statistic = RELEASED_STATISTIC,
    matches: str = RELEASED_MATCHES,
    n_samples: int | None = RELEASED_N_SAMPLES,
    rank_range: ranking.RankRangeRule = RELEASED_RANK_RANGE,
    incomplete_packages: str = "keep",
    seed_stability_seeds: int = SEED_STABILITY_SEEDS,
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
    unsure > bot).

    Ranking, by default the released Table 1 procedure (:data:`RELEASED`): one match per annotation
    (``matches``, see :func:`ranking_matches`), ``n_bootstrap`` = 1000 resamples of ``n_samples`` =
    5000 matches drawn with replacement (None: as many as there are), systems ranked in each by
    ``statistic`` = ``"win_share"`` (wins / matches played; ``"mean_win_rate"``: the paper's score),
    a rank range per system that holds > 99.5 % of its bootstrap ranks by the ``rank_range`` rule
    (``"released"``: from the best rank seen to the smallest upper bound that holds > 99.5 %, what
    the released code computed; ``"shortest"``: the shortest such range, ties to the better ranks;
    see :mod:`dialeval.stats.ranking`), and systems whose ranges overlap, transitively, in one
    cluster. TrueSkill uses the same matches. Systems are listed best first (cluster, then mean
    bootstrap rank).

    ``seed_stability`` (beside ``clusters``): the clustering redone with bootstrap seeds 0 ..
    ``seed_stability_seeds`` - 1 (20 by default; 0 skips it): ``share`` = the share of seeds giving
    the reported clustering, and per system ``cluster_seed_share`` = the share of seeds in which
    its reported cluster appears (see :func:`seed_stability`). On the released Empathetic data the
    clusters BL > {BR, GPT} > S2 > DR come out in 11 of 20 seeds: a firm BL, a loose GPT/BR split.

    ``incomplete_packages``: ``"keep"`` (default, as the released Table 1 script) or ``"drop"``
    (as its stability script and the data of its R survival script): annotations of a package the
    annotator did not finish (see :func:`complete_packages`); applies to the whole report.

    ``stability`` (Deriu et al. 2020, "On Reliability"): ``leave_one_out`` and ``subsample``: for each k of
    ``stability_sizes`` (capped at the most conversations any pair has), ``stability_repeats`` draws of
    k conversations per pair (seeded), each clustered as the full data is (``stability_bootstrap``
    bootstrap repetitions, default ``n_bootstrap``); ``reference_share`` = share of draws giving the
    full-data clustering, ``modal_share`` = share giving the draw's most frequent clustering.
    ``feature_win_rates``: per-feature win rates (paper Table 2), see :func:`feature_win_rates_report`.
    ``time_to_significance``: see :func:`time_to_significance` (``tts=False`` skips it).
    ``automatic_metrics``: only when bot turns carry references (:mod:`dialeval.analysis.metrics`).
    """
    if matches not in MATCHES:
        raise ValueError(f"matches must be one of {MATCHES}, got {matches!r}")
    if rank_range not in ranking.RANK_RANGE_RULES:
        raise ValueError(f"rank_range must be one of {ranking.RANK_RANGE_RULES}, got {rank_range!r}")
    if incomplete_packages not in ("keep", "drop"):
        raise ValueError(f"incomplete_packages must be 'keep' or 'drop', got {incomplete_packages!r}")
    frame = annotation_frame(dataset)
    n_all = len(frame)
    if incomplete_packages == "drop":
        frame = frame[complete_packages(frame, dataset)].reset_index(drop=True)
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
            "rank_range": rank_range,
            "coverage": 0.995,
            "incomplete_packages": incomplete_packages,
            "n_incomplete_package_annotations_dropped": n_all - len(frame),
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
            "win_rate": to_jsonable(r["win_rate"]),
            "p": to_jsonable(r["p"]),
        }
        for r in wr.to_dict("records")
    ]
    systems_out: list[dict[str, Any]] = []
    outcomes = row_outcomes(bots, matches)  # read by every ranking of bot-bot rows below
    if len(bots):
        table = _ranking_of(bots, n_bootstrap, seed, statistic, n_samples, matches, rank_range, outcomes)
        m = _matches_of(bots, matches, outcomes)
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
                    "score": to_jsonable(scores.get(s, float("nan"))),
                    "rank_range": [int(r["lo"]), int(r["hi"])],
                    "cluster": int(r["cluster"]),
                    "mean_rank": to_jsonable(r["mean_rank"]),
                    "trueskill": to_jsonable(ts_mu.get(s)),
                }
            )
        report["clusters"] = ranking.cluster_list(dict(zip(table["system"], table["cluster"])))
    else:
        report["clusters"] = []
    if seed_stability_seeds > 0 and len(bots):
        report["seed_stability"] = seed_stability(
            bots,
            report["clusters"],
            tuple(range(int(seed_stability_seeds))),
            n_bootstrap,
            statistic,
            n_samples,
            matches,
            rank_range,
            outcomes,
        )
        for entry in systems_out:
            entry["cluster_seed_share"] = report["seed_stability"]["cluster_share"].get(entry["name"])
    else:
        report["seed_stability"] = {"seeds": 0, "share": None, "clusterings": [], "cluster_share": {}}
    report["systems"] = systems_out

    if survival:
        report["survival"], report["cox"] = _survival_parts(frame)
    else:
        report["survival"], report["cox"] = {"curves": {}, "logrank": [], "note": "not requested"}, []

    agreement = stb.label_agreement(frame)
    report["agreement"] = [
        {"system": r["system"], "label": r["label"], "agreement": to_jsonable(r["agreement"]), "n": int(r["n"])}
        for r in agreement.to_dict("records")
    ]
    report["feature_alpha"] = {k: to_jsonable(v) for k, v in stb.feature_alpha(bots).items()}
    report["time"] = {k: to_jsonable(v) for k, v in stb.time_summary(frame["elapsed_s"]).items()}
    if stability and len(bots):
        loo = stb.leave_one_out(
            bots, _cluster_fn(n_bootstrap, seed, statistic, n_samples, matches, rank_range, outcomes)
        )
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
                rank_range=rank_range,
                outcomes=outcomes,
            ),
        }
    else:
        report["stability"] = {"leave_one_out": [], "all_same": None, "subsample": []}
    report["feature_win_rates"] = feature_win_rates_report(bots)
    report["time_to_significance"] = time_to_significance(frame, n_sim=tts_n_sim, seed=seed) if tts else []
    report["annotator_model"] = annotator_model(dataset, frame, seed=seed)
    metrics = metric_report(dataset, report)
    if metrics is not None:
        report["automatic_metrics"] = metrics
    return report


def annotator_model(dataset: Dataset, frame: pd.DataFrame, seed: int = 0) -> dict[str, Any]:
    """Dawid-Skene and MACE (analysis/annotators.py) on each entity's human / bot / unsure label
    (the item: a conversation's entity) and on each feature's winner (the item: a conversation)."""
    from dialeval.analysis.annotators import annotator_options, label_section, model_judges

    if not annotator_options(dataset.meta.get("config")).get("models", True):
        return {"note": "annotator models off (annotators.models: false in the study file)"}
    judges = model_judges(dataset)
    entity = pd.concat(
        [
            pd.DataFrame(
                {
                    "item": frame["conversation_id"].astype(str) + f" / entity{k}",
                    "annotator": frame["annotator"],
                    "label": frame[f"label{k}"].fillna("unsure").astype(str),
                }
            )
            for k in (0, 1)
        ]
    )
    out: dict[str, Any] = {}
    if (section := label_section(entity, judges=judges, seed=seed)) is not None:
        out["entity_label"] = section
    features = {}
    for f in STB_FEATURES:
        rows = pd.DataFrame(
            {"item": frame["conversation_id"].astype(str), "annotator": frame["annotator"], "label": frame[f]}
        )
        if (section := label_section(rows, judges=judges, seed=seed)) is not None:
            features[f] = section
    if features:
        out["features"] = features
    return out or {"note": "too few annotators for an annotator model"}


def subsample_stability_report(
    bots: pd.DataFrame,
    sizes: Sequence[int] = STABILITY_SIZES,
    n_repeats: int = 50,
    n_bootstrap: int = RELEASED_N_BOOTSTRAP,
    seed: int = 0,
    statistic: ranking.Statistic = RELEASED_STATISTIC,
    n_samples: int | None = RELEASED_N_SAMPLES,
    matches: str = RELEASED_MATCHES,
    reference: list[list[str]] | None = None,
    rank_range: ranking.RankRangeRule = "released",
    outcomes: pd.Series | None = None,
) -> dict[str, Any]:
    """Subsampling stability of the clustering of the bot–bot frame ``bots`` (see
    :func:`analyze_spot_the_bot`): ``{"reference": full-data clusters, "conversations_per_pair":
    {min, max}, "subsample": [{k, reference_share, modal_share, n_rankings, modal}]}``.
    ``reference``: the full-data clustering already computed (the report's), else computed here;
    ``outcomes``: row_outcomes(bots) when already computed."""
    if outcomes is None:
        outcomes = row_outcomes(bots, matches)
    rank_fn = _cluster_fn(n_bootstrap, seed, statistic, n_samples, matches, rank_range, outcomes)
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
            "reference_share": to_jsonable(r["reference_share"]),
            "modal_share": to_jsonable(r["modal_share"]),
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
    """Per-feature win rates of the bot–bot frame ``bots`` (Deriu et al. 2020, Table 2): ``{"systems":
    [{name, fluency, sensibleness, specificity}] (mean pairwise feature win rate), "pairwise":
    [{feature, a, b, wins, losses, draws, win_rate, p}]}`` (chi-square p as for ``win_rates``)."""
    if bots.empty:
        return {"systems": [], "pairwise": []}
    pairwise, systems = stb.feature_win_rates(bots, STB_FEATURES)
    return {
        "systems": [
            {"name": name, **{f: to_jsonable(row[f]) for f in STB_FEATURES}} for name, row in systems.iterrows()
        ],
        "pairwise": [
            {
                "feature": r["feature"],
                "a": r["a"],
                "b": r["b"],
                "wins": int(r["wins"]),
                "losses": int(r["losses"]),
                "draws": int(r["draws"]),
                "win_rate": to_jsonable(r["win_rate"]),
                "p": to_jsonable(r["p"]),
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
    jsonable: list[dict[str, Any]] = to_jsonable(out)
    return jsonable
