"""Direct Assessment analysis of a Dataset (Ji et al. 2022): from judgments to the JSON report.

`direct_assessment_frames(dataset)` builds the tables (for the HTML report);
`analyze_direct_assessment(dataset)` returns the JSON-ready dict:

  method: "direct-assessment"
  systems: [{name, n, conversations, score (= overall z), z: {overall, <criterion>...}, raw: {...}}]  best first,
           ordinary bots only, from annotators who passed QC
  qc_system: the same for the degraded bot(s) (None when absent)
  annotators: {total, passed, failed, pass_rate}
  conversations: {total, rated, passed, pass_rate}  ordinary bots only; total counts assigned
           conversations (an empty submission's included), rated those with ratings
  pairwise: [{a, b, p}]  one-sided Mann-Whitney U, a's per-conversation mean z > b's
  criteria_correlation: {basis: "raw", pearson: {row: {col: r}}, spearman: {...}, z: {pearson, spearman}}
           across systems (overall + criteria); raw means reproduce paper Table 8
  rater_agreement: {passed: {pairs, mean, median, q1, q3}, failed: {...}}
  minutes_per_conversation: {passed, failed, all}
  filtered_annotators: [{id, reason, p}]
  topic_opinions: {table: [{opinion, passed, failed}] (%), n, missing}  paper Table 2 (see topic_opinions)
  time_to_significance: [{a, b, n_needed, judgments_needed, hours_needed, ..., curve}]  (see time_to_significance)
  automatic_metrics: word-overlap metrics vs the system scores, only when bot turns carry references
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from dialeval.analysis.metrics import metric_report
from dialeval.analysis.practice import is_practice
from dialeval.jsonable import to_jsonable
from dialeval.records import DA_CRITERIA, DA_NEGATIVE, Conversation, Dataset
from dialeval.stats import direct_assessment as da
from dialeval.stats.power import mann_whitney_pairs_time_to_significance

QC_NAME = "qc"
ORDER = da.PAPER_ORDER


@dataclass
class DirectAssessmentFrames:
    """Every table of one Direct Assessment analysis."""

    ratings: pd.DataFrame  # one row per rated conversation, reversed scores, z columns, passed flag
    qc: pd.DataFrame  # per annotator: p, n_qc, n_ordinary, passed, reason
    systems: pd.DataFrame  # mean z per ordinary system (passing annotators), best first
    raw: pd.DataFrame  # mean raw (reversed) per ordinary system, same order
    qc_system: pd.DataFrame  # the same two tables for the QC bot(s), z and raw side by side
    pairwise: pd.DataFrame  # a, b, p, n_a, n_b
    criteria_pearson: pd.DataFrame  # across systems, on raw (reversed) means, as paper Table 8
    criteria_spearman: pd.DataFrame
    criteria_z_pearson: pd.DataFrame  # the same on mean z
    criteria_z_spearman: pd.DataFrame
    agreement: pd.DataFrame  # rater pairs with r and group passed/failed
    meta: dict[str, Any] = field(default_factory=dict)


def judgments_frame(dataset: Dataset) -> pd.DataFrame:
    """Dataset judgments (question "ratings") -> one row per rated conversation with
    annotator, conversation, unit, system, is_qc, elapsed_s and the seven raw criteria (not reversed).
    A conversation is QC when its system is named 'qc' or its meta says {"qc": true}."""
    convs = dataset.conversation_map()
    rows = []
    for j in dataset.judgments:
        if j.question != "ratings" or not isinstance(j.value, dict) or is_practice(j):
            continue
        conv = convs.get(j.conversation_id) if j.conversation_id else None
        system = conv.bots[0] if conv is not None and conv.bots else j.meta.get("system")
        is_qc = system == QC_NAME or bool(conv is not None and conv.meta.get("qc"))
        row = {
            "annotator": j.annotator_id,
            "conversation": j.conversation_id,
            "unit": j.unit_id,
            "system": system,
            "is_qc": is_qc,
            "elapsed_s": j.elapsed_s,
        }
        for c in DA_CRITERIA:
            v = j.value.get(c)
            row[c] = float(v) if v is not None else math.nan
        rows.append(row)
    cols = ["annotator", "conversation", "unit", "system", "is_qc", "elapsed_s", *DA_CRITERIA]
    return pd.DataFrame(rows, columns=cols)


def direct_assessment_frames(dataset: Dataset, alpha: float = 0.05) -> DirectAssessmentFrames:
    """Run the whole paper-002 analysis and return its tables."""
    raw = judgments_frame(dataset)
    if raw.empty:
        raise ValueError("the dataset has no direct-assessment ratings (judgments with question 'ratings')")
    ratings = da.standardize(da.reverse_negatives(raw, DA_NEGATIVE), DA_CRITERIA)
    qc = da.qc_test(ratings, alpha=alpha)
    passed_ids = set(qc.index[qc["passed"]])
    ratings["passed"] = ratings["annotator"].isin(passed_ids)
    good = ratings[ratings["passed"]]
    ordinary, qc_rows = good[~good["is_qc"]], good[good["is_qc"]]

    systems = da.system_scores(ordinary, ORDER)
    raw_table = da.raw_system_scores(ordinary, ORDER).reindex(systems.index)
    qc_z, qc_raw = da.system_scores(qc_rows, ORDER), da.raw_system_scores(qc_rows, ORDER)
    qc_system = qc_z.join(qc_raw[["overall", *ORDER]], rsuffix="_raw")
    pairwise = da.pairwise_tests(ordinary, list(systems.index))
    # Paper Table 8 correlates the criteria over the systems' raw (reversed) means; z kept too.
    corr = da.criteria_correlations(raw_table, ["overall", *ORDER])
    corr_z = da.criteria_correlations(systems, ["overall", *ORDER])

    agreement_parts = []
    for label, sel in (("passed", ratings["passed"]), ("failed", ~ratings["passed"])):
        part = da.rater_agreement(ratings[sel])
        part.insert(0, "group", label)
        agreement_parts.append(part)
    non_empty = [p for p in agreement_parts if not p.empty]  # pandas warns on concatenating empty frames
    agreement = pd.concat(non_empty, ignore_index=True) if non_empty else agreement_parts[0]

    meta = {"alpha": alpha, "passed_annotators": sorted(passed_ids)}
    return DirectAssessmentFrames(
        ratings=ratings,
        qc=qc,
        systems=systems,
        raw=raw_table,
        qc_system=qc_system,
        pairwise=pairwise,
        criteria_pearson=corr["pearson"],
        criteria_spearman=corr["spearman"],
        criteria_z_pearson=corr_z["pearson"],
        criteria_z_spearman=corr_z["spearman"],
        agreement=agreement,
        meta=meta,
    )


def _system_entries(z: pd.DataFrame, raw: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for name, row in z.iterrows():
        r = raw.loc[name]
        out.append(
            {
                "name": name,
                "n": int(row["n"]),
                "conversations": int(row["conversations"]),
                "score": to_jsonable(row["overall"]),
                "z": {"overall": to_jsonable(row["overall"]), **{c: to_jsonable(row[c]) for c in ORDER}},
                "raw": {"overall": to_jsonable(r["overall"]), **{c: to_jsonable(r[c]) for c in ORDER}},
            }
        )
    return out


def _matrix(m: pd.DataFrame) -> dict[str, dict[str, Any]]:
    return {str(i): {str(c): to_jsonable(m.loc[i, c]) for c in m.columns} for i in m.index}


def report_from_frames(dataset: Dataset, frames: DirectAssessmentFrames) -> dict[str, Any]:
    """The JSON-ready report of an analysis (see the module docstring)."""
    ratings, qc = frames.ratings, frames.qc
    rated_ids = set(qc.index)
    all_ids = [a.id for a in dataset.annotators] or sorted(rated_ids)
    all_ids += [a for a in sorted(rated_ids) if a not in set(all_ids)]
    rates = da.pass_rates(qc, total_annotators=len(all_ids))

    convs = dataset.conversations

    def is_ordinary(c: Conversation) -> bool:
        return bool(c.bots) and c.bots[0] != QC_NAME and not c.meta.get("qc")

    assigned = sum(1 for c in convs if is_ordinary(c)) if convs else int((~ratings["is_qc"]).sum())
    ordinary = ratings[~ratings["is_qc"]]
    passed_convs = int(ordinary["passed"].sum())

    filtered = []
    for a in all_ids:
        if a not in rated_ids:
            filtered.append({"id": a, "reason": "no ratings (empty submission)", "p": None})
        elif not bool(qc.loc[a, "passed"]):
            filtered.append({"id": a, "reason": qc.loc[a, "reason"], "p": to_jsonable(qc.loc[a, "p"])})

    qc_system = None
    if len(frames.qc_system):
        qz = frames.qc_system
        qraw = qz[[f"{c}_raw" for c in ("overall", *ORDER)]].rename(columns=lambda c: c[:-4])
        entries = _system_entries(qz[["conversations", "n", "overall", *ORDER]], qraw)
        qc_system = entries[0] if len(entries) == 1 else entries

    agreement = {}
    for label in ("passed", "failed"):
        values = frames.agreement.loc[frames.agreement["group"] == label, "r"]
        agreement[label] = da.summarize_correlations(values)

    return {
        "method": "direct-assessment",
        "alpha": frames.meta["alpha"],
        "systems": _system_entries(frames.systems, frames.raw),
        "qc_system": qc_system,
        "annotators": rates,
        "conversations": {
            "total": assigned,
            "rated": len(ordinary),
            "passed": passed_convs,
            "pass_rate": passed_convs / assigned if assigned else None,
        },
        "pairwise": [{"a": r.a, "b": r.b, "p": to_jsonable(r.p)} for r in frames.pairwise.itertuples()],
        "criteria_correlation": {
            "basis": "raw",
            "pearson": _matrix(frames.criteria_pearson),
            "spearman": _matrix(frames.criteria_spearman),
            "z": {"pearson": _matrix(frames.criteria_z_pearson), "spearman": _matrix(frames.criteria_z_spearman)},
        },
        "rater_agreement": agreement,
        "minutes_per_conversation": da.minutes_per_conversation(ratings, frames.meta["passed_annotators"]),
        "filtered_annotators": filtered,
    }


OPINIONS = ("like", "ambivalent", "dislike")


def topic_opinions(dataset: Dataset, frames: DirectAssessmentFrames) -> dict[str, Any]:
    """Ji et al. 2022, Table 2: the share (%) of topics reported as liked, ambivalent about or disliked,
    for workers who passed and who failed quality control.

    Unit: one rated conversation (each of the six of a HIT, the QC one included: on Free run 1
    this gives Pass 83.9 / 7.4 / 8.7 and Fail 88.6 / 3.7 / 7.7, the paper's numbers but for a
    fail-ambivalent 3.8 there: 20 of 534 = 3.745 %), with the opinion of the topic the worker
    named before the chat (imported runs: the first ``topic_opinion``; collected runs: the
    ``opinion`` given with the topic); topic changes during the chat are not counted. On Free
    run 2 it gives the paper's Pass 86.3 / 6.2 / 7.4 and Fail 93.8 / 2.3 / 3.9. Conversations
    without an opinion are left out and counted in ``missing``.

    Returns ``{"table": [{opinion, passed, failed}] (percent), "n": {passed, failed},
    "missing": k}``; the percentages are None for a group without opinions.
    """
    convs = dataset.conversation_map()
    passed_ids = set(frames.meta["passed_annotators"])
    counts = {g: dict.fromkeys(OPINIONS, 0) for g in ("passed", "failed")}
    missing = 0
    for row in frames.ratings[["annotator", "conversation"]].itertuples(index=False):
        conv = convs.get(row.conversation)
        meta = conv.meta if conv is not None else {}
        opinion = meta.get("topic_opinion", meta.get("opinion"))
        opinion = opinion.strip().lower() if isinstance(opinion, str) else None
        if opinion not in OPINIONS:
            missing += 1
            continue
        counts["passed" if row.annotator in passed_ids else "failed"][opinion] += 1
    n = {g: sum(c.values()) for g, c in counts.items()}
    table = [
        {"opinion": o, **{g: (100.0 * counts[g][o] / n[g] if n[g] else None) for g in ("passed", "failed")}}
        for o in OPINIONS
    ]
    return {"table": table, "n": n, "missing": missing}


def time_to_significance(
    frames: DirectAssessmentFrames, n_sim: int = 200, seed: int | None = 0, power: float = 0.8, n_max: int = 10_000
) -> list[dict[str, Any]]:
    """Per pair of ordinary systems (a = the one with the higher score): conversations per system,
    judgments and annotator-hours until the one-sided Mann-Whitney U test on per-conversation mean
    z of passing annotators (the test of ``pairwise``) gives p < 0.05 with probability ``power``,
    by resampling the collected per-conversation scores
    (:func:`dialeval.stats.power.mann_whitney_pairs_time_to_significance`).

    Time: the run's rated seconds (every rated conversation: QC ones and those of annotators who
    failed QC included) divided by the passing ordinary conversations, so the hours include the
    QC conversation of each HIT and the work lost to failing annotators (``overhead`` is that
    ratio in conversations). Empty when the judgments carry no ``elapsed_s``.
    Entries: {a, b, n_needed (per system), judgments_needed, hours_needed, ..., curve: [{n,
    judgments, power, power_sim, hours, p_significant}]}; the curve holds the resampled sizes.
    """
    ratings = frames.ratings
    secs = ratings["elapsed_s"].astype(float)
    good = ratings[ratings["passed"] & ~ratings["is_qc"]]
    if secs.dropna().empty or good.empty:
        return []
    rated = ratings[secs.notna()]
    passed_timed = int((rated["passed"] & ~rated["is_qc"]).sum())
    if passed_timed == 0:
        return []
    overhead = len(rated) / passed_timed
    sec = float(secs.dropna().sum()) / passed_timed
    per_annotator = len(good) / max(good["annotator"].nunique(), 1)
    samples = {s: good.loc[good["system"] == s, "z"].dropna().to_numpy(dtype=float) for s in frames.systems.index}
    order = [s for s in frames.systems.index if len(samples[s])]
    pairs = [(a, b) for i, a in enumerate(order) for b in order[i + 1 :]]
    results = mann_whitney_pairs_time_to_significance(
        samples,
        pairs,
        seconds_per_judgment=sec,
        judgments_per_annotator=per_annotator,
        power=power,
        n_max=n_max,
        n_sim=n_sim,
        seed=seed,
    )
    out = []
    for a, b in pairs:
        r = results[a, b]
        curve = r.pop("curve")
        curve = curve[curve["power_sim"].notna()].assign(p_significant=lambda c: c["power_sim"])
        out.append(
            {"a": a, "b": b, **r, "overhead": overhead, "n_a": len(samples[a]), "n_b": len(samples[b]), "curve": curve}
        )
    jsonable: list[dict[str, Any]] = to_jsonable(out)
    return jsonable


def analyze_direct_assessment(
    dataset: Dataset, alpha: float = 0.05, tts: bool = True, n_sim: int = 200, seed: int | None = 0
) -> dict[str, Any]:
    """Analyse a direct-assessment Dataset as Ji et al. (2022) does; returns the JSON-ready report.
    Use `direct_assessment_frames` for the underlying DataFrames.

    Adds ``time_to_significance`` (see :func:`time_to_significance`; ``tts=False`` skips it, ``n_sim``
    resampled studies per size) and ``automatic_metrics`` when bot turns carry reference responses
    (see :mod:`dialeval.analysis.metrics`)."""
    frames = direct_assessment_frames(dataset, alpha=alpha)
    report = report_from_frames(dataset, frames)
    report["topic_opinions"] = topic_opinions(dataset, frames)
    report["time_to_significance"] = time_to_significance(frames, n_sim=n_sim, seed=seed) if tts else []
    report["annotator_model"] = {
        "note": (
            "Direct Assessment has no categorical labels (0-100 sliders, standardised per worker), so no "
            "Dawid-Skene or MACE model applies; each worker's reliability is the quality-control test "
            "against the degraded bot (quality_control), as Ji et al. (2022) filter workers."
        )
    }
    metrics = metric_report(dataset, report)
    if metrics is not None:
        report["automatic_metrics"] = metrics
    return report
