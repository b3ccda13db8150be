"""The report's judge audit: how far an LLM judge can be trusted on this study.

Per question: judge–human agreement (raw share and Cohen's kappa, 95% item-bootstrap intervals)
beside human–human agreement on the same study; for pairwise methods the same on decisive answers
only (no tie, no "unsure"), position bias (share of answers choosing the option shown first: on the
judge's swapped pairs when it has them, with an exact binomial test against 1/2) and position
consistency (same winner in both side orders: the judge's own swapped pairs, or imported verdicts
on one item in both orders), length preference
(share choosing the longer option, judge vs people, Fisher's exact test), agreement per bot, the
answers that failed, and one sentence that says where the judge agrees with people as often as
people agree with each other.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace
from itertools import combinations
from typing import Any

import numpy as np

from ..records import Dataset, Judgment, JudgmentColumns, is_judge_annotator
from ..stats.rater_agreement import agreement, share_test, two_shares_test
from .run import FAILURE_QUESTION, adapter_for, judge_meta
from .tasks import JudgeAdapter, Label

INCLUDED_PLATFORM = "judge-counted"  # a judge whose verdicts the statistics count (--include-judges)
POSITION_NOTE = (
    "Share of decisive answers that chose the option shown first; 0.5 means no position bias. "
    "On swapped pairs each item was asked in both side orders."
)


def judge_ids(dataset: Dataset) -> list[str]:
    return [a.id for a in dataset.annotators if is_judge_annotator(a)]


def is_verdict(j: Judgment) -> bool:
    """A judge's judgment that stands for its answer on an item (imported judges have no meta)."""
    return j.question != FAILURE_QUESTION and judge_meta(j).get("role", "verdict") == "verdict"


def people_only(dataset: Dataset, include_judges: bool = False) -> Dataset:
    """The data set the human statistics see: judges left out (or, when asked, their verdicts kept)."""
    judges = set(judge_ids(dataset))
    if not judges:
        return dataset
    if include_judges:
        kept = [j for j in dataset.judgments if j.annotator_id not in judges or is_verdict(j)]
        # Analyses that set judges apart themselves (arena) must see these as annotators too.
        annotators = [replace(a, platform=INCLUDED_PLATFORM) if a.id in judges else a for a in dataset.annotators]
        return replace(dataset, annotators=annotators, judgments=kept)
    return replace(
        dataset,
        annotators=[a for a in dataset.annotators if a.id not in judges],
        judgments=[j for j in dataset.judgments if j.annotator_id not in judges],
    )


def _latest(
    labels: list[Label], judges: set[str] | frozenset[str] = frozenset()
) -> dict[tuple[str, str], dict[str, Label]]:
    """(question, item) -> annotator -> label (an annotator's last answer on an item counts). A judge
    that answered one item twice (imported verdicts in both side orders) and changed its answer
    counts as a tie there, as MT-Bench scores an inconsistent pair."""
    out: dict[tuple[str, str], dict[str, Label]] = defaultdict(dict)
    for lab in labels:
        before = out[(lab.question, lab.item)].get(lab.annotator)
        if lab.annotator in judges and before is not None and before.label != lab.label:
            lab = replace(lab, label="tie", decisive=False, score=0.5, chose_first=None, chose_longer=None)
        out[(lab.question, lab.item)][lab.annotator] = lab
    return out


def _imported_swaps(dataset: Dataset, judge: str) -> dict[str, Any] | None:
    """Position consistency of imported verdicts: on items (meta "item") the judge answered in both
    side orders, the share where both orders name the same winner (a tie in both counts as the same),
    as LLMBar and MT-Bench report it. None when no item has both orders."""
    answers: dict[str, dict[tuple[str, ...], str]] = defaultdict(dict)
    for j in dataset.judgments:
        item = (j.meta or {}).get("item")
        v = j.value if isinstance(j.value, dict) else {}
        if j.annotator_id != judge or item is None or not j.shown_order or "winner" not in v:
            continue
        winner = str(v["winner"])
        chosen = str(v.get(winner)) if winner in ("model_a", "model_b") else "tie"  # a model's name, or tie
        answers[str(item)][tuple(j.shown_order)] = chosen
    both = [orders for orders in answers.values() if len(orders) >= 2]
    if not both:
        return None
    same = sum(1 for orders in both if len(set(orders.values())) == 1)
    return {"n": len(both), "share": round(same / len(both), 4), "ci": share_test(same, len(both))["ci"]}


def _pairs(
    by_item: dict[tuple[str, str], dict[str, Label]], question: str, judge: str | None, people: set[str], decisive: bool
) -> list[list[tuple[Any, Any]]]:
    items = []
    for (q, _item), answers in by_item.items():
        if q != question:
            continue
        humans = [lab for a, lab in answers.items() if a in people and (lab.decisive or not decisive)]
        if judge is None:
            items.append([(x.label, y.label) for x, y in combinations(humans, 2)])
        elif judge in answers and (answers[judge].decisive or not decisive):
            items.append([(answers[judge].label, h.label) for h in humans])
    return [i for i in items if i]


def _per_bot(by_item, question: str, judge: str, people: set[str]) -> dict[str, dict[str, Any]]:
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (q, _item), answers in by_item.items():
        if q != question or judge not in answers:
            continue
        mine = answers[judge]
        for a, lab in answers.items():
            if a in people:
                for bot in set(mine.bots):
                    hits[bot][0] += lab.label == mine.label
                    hits[bot][1] += 1
    return {bot: {"agreement": round(k / n, 4), "pairs": n} for bot, (k, n) in sorted(hits.items()) if n}


def _position(dataset: Dataset, judge: str, labels: list[Label], people: set[str]) -> dict[str, Any]:
    orders = [
        judge_meta(j) for j in dataset.judgments if j.annotator_id == judge and judge_meta(j).get("role") == "order"
    ]
    picked = [m["chose_first"] for m in orders if m.get("chose_first") is not None]
    if orders:
        by_key: dict[str, dict[str, Any]] = defaultdict(dict)
        for j in dataset.judgments:
            m = judge_meta(j)
            if j.annotator_id == judge and m.get("role") == "order":
                by_key[m["key"]][m["order"]] = j.value
        both = [v for v in by_key.values() if len(v) == 2]
        same = sum(1 for v in both if len({repr(x) for x in v.values()}) == 1)
        out = {"basis": "swapped pairs", "first_share": share_test(sum(picked), len(picked))}
        out["consistent_pairs"] = {"n": len(both), "share": round(same / len(both), 4) if both else None}
    else:
        mine = [lab.chose_first for lab in labels if lab.annotator == judge and lab.chose_first is not None]
        swaps = _imported_swaps(dataset, judge)
        basis = "imported verdicts in both side orders" if swaps else "one side order (no swapped pairs)"
        out = {"basis": basis, "first_share": share_test(sum(mine), len(mine))}
        if swaps:
            out["consistent_pairs"] = swaps
    theirs = [lab.chose_first for lab in labels if lab.annotator in people and lab.chose_first is not None]
    out["people_first_share"] = share_test(sum(theirs), len(theirs))
    return out


def _length(labels: list[Label], judge: str, people: set[str]) -> dict[str, Any] | None:
    mine = [lab.chose_longer for lab in labels if lab.annotator == judge and lab.chose_longer is not None]
    theirs = [lab.chose_longer for lab in labels if lab.annotator in people and lab.chose_longer is not None]
    if not mine:
        return None
    return {
        "judge_longer_share": share_test(sum(mine), len(mine)),
        "people_longer_share": share_test(sum(theirs), len(theirs)),
        "p_value_judge_vs_people": two_shares_test(sum(mine), len(mine), sum(theirs), len(theirs)),
    }


def _failures(dataset: Dataset, judge: str) -> dict[str, Any]:
    """Answers that failed and were not answered by a later run."""
    answered, failed = set(), {}
    for j in dataset.judgments:
        if j.annotator_id != judge:
            continue
        m = judge_meta(j)
        slot = (m.get("key"), m.get("order"))
        if m.get("role") == "failure":
            failed[slot] = m.get("error")
        elif m.get("role") in ("order", "verdict"):
            answered.add(slot)
    open_ = {s: e for s, e in failed.items() if s not in answered}
    return {"n": len(open_), "examples": [f"{k} [{o}]: {e}" for (k, o), e in list(open_.items())[:3]]}


def people_section(
    dataset: Dataset, people: set[str], adapter: JudgeAdapter | None = None, n_boot: int = 1000, seed: int = 0
) -> dict[str, Any] | None:
    """People among themselves, with or without a judge: agreement on the items more than one person
    judged (raw share and kappa; two people have no first and second rater, so the pairs count both
    ways: Fleiss' kappa for pairs) and the share of decisive answers that chose the longer option
    (exact binomial test against 1/2), when answers' texts are there. None when neither applies."""
    adapter = adapter or adapter_for(dataset.method)
    if adapter.label_frame is not None and isinstance(dataset.judgments, JudgmentColumns):
        return _people_of_frame(adapter.label_frame(dataset), people, adapter.paired, n_boot, seed)
    labels = [lab for lab in adapter.labels(dataset) if lab.annotator in people]
    by_item = _latest(labels)
    out: dict[str, Any] = {}
    repeated = sum(1 for answers in by_item.values() if len(answers) > 1)
    if repeated:
        out["items_judged_more_than_once"] = repeated
        for question in sorted({q for q, _ in by_item}):
            out.setdefault("agreement", {})[question] = agreement(
                _pairs(by_item, question, None, people, False), symmetric=True, n_boot=n_boot, seed=seed
            )
        out["kappa"] = "Fleiss' kappa over pairs of people on the same item (Scott's pi for two)"
    if adapter.paired:
        longer = [lab.chose_longer for lab in labels if lab.chose_longer is not None]
        if longer:
            out["longer_answer_share"] = share_test(sum(longer), len(longer))
            out["longer_answer_note"] = "Share of decisive answers choosing the longer answer; 0.5 means none."
    return out or None


def _people_of_frame(frame: Any, people: set[str], paired: bool, n_boot: int, seed: int) -> dict[str, Any] | None:
    """people_section on labels held as a DataFrame (JudgeAdapter.label_frame): the same numbers.
    Only the items more than one person judged become Label objects (agreement compares those);
    the length preference is counted on the columns."""
    keep = frame["annotator"].isin(people)
    labels = frame if bool(keep.all()) else frame[keep]  # no copy of a million labels for nothing
    out: dict[str, Any] = {}
    people_per_item = labels.groupby(["question", "item"], sort=False)["annotator"].transform("nunique")
    shared = labels[(people_per_item > 1).to_numpy()]
    if len(shared):
        fields = ("item", "question", "annotator", "label", "decisive", "chose_longer", "score")
        by_item = _latest(
            [
                Label(
                    str(item),
                    str(question),
                    annotator,
                    label,
                    decisive=bool(decisive),
                    chose_longer=longer,
                    score=score,
                )
                for item, question, annotator, label, decisive, longer, score in zip(
                    *(shared[f].tolist() for f in fields)
                )
            ]
        )
        out["items_judged_more_than_once"] = len(by_item)
        # every question of the people's labels, as people_section (one with no shared item has none)
        for question in sorted(set(labels["question"].tolist())):
            out.setdefault("agreement", {})[question] = agreement(
                _pairs(by_item, question, None, people, False), symmetric=True, n_boot=n_boot, seed=seed
            )
        out["kappa"] = "Fleiss' kappa over pairs of people on the same item (Scott's pi for two)"
    if paired:
        longer = labels["chose_longer"]
        known = longer.notna()
        if known.any():
            out["longer_answer_share"] = share_test(int((longer[known] == True).sum()), int(known.sum()))  # noqa: E712
            out["longer_answer_note"] = "Share of decisive answers choosing the longer answer; 0.5 means none."
    return out or None


ELO = 400 / math.log(10)  # log-strength -> Elo-like points (mean 1000), as the leaderboards print


def _item_scores(labels: list[Label], who: set[str]) -> dict[tuple[str, str], tuple[tuple[str, ...], float]]:
    """(question, item) -> (bots, mean score of bots[0]) over the answers of `who`."""
    sums: dict[tuple[str, str], list[Any]] = {}
    for lab in labels:
        if lab.annotator in who and lab.score is not None and len(lab.bots) == 2:
            entry = sums.setdefault((lab.question, lab.item), [lab.bots, 0.0, 0])
            entry[1] += lab.score
            entry[2] += 1
    return {k: (bots, total / n) for k, (bots, total, n) in sums.items()}


def _corrected(
    dataset: Dataset, adapter: JudgeAdapter, judge: str, labels: list[Label], people: set[str], question: str
) -> dict[str, Any] | None:
    """Win rates against the field and Bradley–Terry scores from people only, and judge-corrected
    (PPI++, stats/ppi.py) from people plus the judge's labels on the items people did not judge.

    The judge's score on an item is the mean of its two side orders (a pair it answered both ways
    differently scores 1/2), else its verdict (imported verdicts have one order)."""
    from ..stats.ppi import battles_to_moments, ppi_bradley_terry, ppi_model_win_rates

    orders = [j for j in dataset.judgments if j.annotator_id == judge and judge_meta(j).get("role") == "order"]
    judge_labels = adapter.labels(replace(dataset, judgments=orders)) if orders else labels
    human = {k: v for k, v in _item_scores(labels, people).items() if k[0] == question}
    machine = {k: v for k, v in _item_scores(judge_labels, {judge}).items() if k[0] == question}
    rows = []
    for key in sorted(set(human) | set(machine)):
        bots = (human.get(key) or machine[key])[0]
        rows.append((bots[0], bots[1], human[key][1] if key in human else math.nan, machine.get(key, (0, math.nan))[1]))
    if len({b for r in rows for b in r[:2]}) < 2:
        return None
    names, moments, counts = battles_to_moments(*zip(*rows))
    if counts["labelled"] < 2:
        return {**counts, "note": "fewer than two items judged by both people and the judge"}
    rates = ppi_model_win_rates(moments)
    human_rates = ppi_model_win_rates(moments, lam=0.0)  # the same interval recipe, the judge weighed 0
    tuned = ppi_bradley_terry(moments, names)
    people_only = ppi_bradley_terry(moments, names, lam=0.0)
    lo, hi = tuned.intervals()
    plo, phi = people_only.intervals()
    ranks = dict(zip(names, tuned.rank_sets()))
    systems: list[dict[str, Any]] = []
    for k, name in enumerate(names):
        systems.append(
            {
                "name": name,
                "win_rate_people": _num(human_rates.estimate[k]),
                "win_rate_people_ci": [_num(human_rates.ci_low[k]), _num(human_rates.ci_high[k])],
                "win_rate_corrected": _num(rates.estimate[k]),
                "win_rate_corrected_ci": [_num(rates.ci_low[k]), _num(rates.ci_high[k])],
                "bt_people": _num(1000 + ELO * people_only.theta[k], 1),
                "bt_people_ci": [_num(1000 + ELO * plo[k], 1), _num(1000 + ELO * phi[k], 1)],
                "bt_corrected": _num(1000 + ELO * tuned.theta[k], 1),
                "bt_corrected_ci": [_num(1000 + ELO * lo[k], 1), _num(1000 + ELO * hi[k], 1)],
                "rank_set_corrected": list(ranks[name]),
            }
        )  # fmt: skip
    widths = [(s["bt_corrected_ci"][1] - s["bt_corrected_ci"][0]) / (s["bt_people_ci"][1] - s["bt_people_ci"][0])
              for s in systems if None not in (*s["bt_corrected_ci"], *s["bt_people_ci"])
              and s["bt_people_ci"][1] != s["bt_people_ci"][0]]  # fmt: skip
    systems.sort(key=lambda s: -(s["bt_corrected"] if s["bt_corrected"] is not None else -math.inf))
    return {
        **counts,
        "lambda_bt": _num(tuned.lam),
        "mean_width_ratio_bt": _num(sum(widths) / len(widths)) if widths else None,
        "systems": systems,
    }


def _num(x: Any, digits: int = 4) -> float | None:
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else round(x, digits)


def _as_often(judge_stats: dict[str, Any], human_stats: dict[str, Any]) -> bool | None:
    """True when the judge–human agreement is not clearly below human–human agreement: the upper end
    of its interval reaches the people's estimate."""
    ours, theirs = judge_stats.get("agreement"), human_stats.get("agreement")
    if ours is None or theirs is None:
        return None
    upper = (judge_stats.get("agreement_ci") or [ours, ours])[1]
    return bool(upper >= theirs)


def _sentence(judge: str, questions: dict[str, Any], headline: str) -> str:
    yes = [q for q, v in questions.items() if v["judges"][judge].get("as_often_as_people") is True]
    no = [q for q, v in questions.items() if v["judges"][judge].get("as_often_as_people") is False]
    unknown = [q for q, v in questions.items() if v["judges"][judge].get("as_often_as_people") is None]
    parts = []
    if yes:
        parts.append(f"{judge} agrees with people as often as people agree with each other on {', '.join(yes)}")
    if no:
        detail = ", ".join(
            f"{q} ({questions[q]['judges'][judge][headline]['agreement']:.2f} vs "
            f"{questions[q]['human_human'][headline]['agreement']:.2f})"
            for q in no
        )
        parts.append(
            ("not on " if yes else f"{judge} agrees with people less often than they agree with each other on ")
            + detail
        )
    if unknown:
        shown = ", ".join(
            f"{q} ({questions[q]['judges'][judge][headline]['agreement']:.2f})"
            for q in unknown
            if questions[q]["judges"][judge][headline]["agreement"] is not None
        )
        if shown:
            parts.append(
                f"{judge} agrees with people on {shown} of {headline} answers; people's agreement with each other "
                "cannot be measured here (one person per item)"
            )
    return "; ".join(parts) + "." if parts else f"{judge} shares no judged item with people yet."


def judge_audit(
    dataset: Dataset, adapter: JudgeAdapter | None = None, n_boot: int = 1000, seed: int = 0
) -> dict[str, Any] | None:
    """The audit section, or None when the study holds no judge's judgments."""
    judges = judge_ids(dataset)
    if not judges:
        return None
    adapter = adapter or adapter_for(dataset.method)
    judge_set = set(judges)
    people = {a.id for a in dataset.annotators if a.id not in judge_set}
    people |= {j.annotator_id for j in dataset.judgments if j.annotator_id not in judge_set}
    kept = [j for j in dataset.judgments if j.annotator_id not in judge_set or is_verdict(j)]
    labels = adapter.labels(replace(dataset, judgments=kept))
    by_item = _latest(labels, judge_set)
    questions_seen = sorted({lab.question for lab in labels})
    has_undecided = any(not lab.decisive for lab in labels)
    headline = "decisive" if adapter.paired and has_undecided else "all"
    section: dict[str, Any] = {
        "judges": judges,
        "compared_on": adapter.agreement_scale,
        "headline": headline,
        "intervals": f"95% item-bootstrap ({n_boot} rounds)",
        "questions": {},
    }
    for question in questions_seen:
        entry: dict[str, Any] = {"human_human": {}, "judges": {}}
        variants = ("all", "decisive") if has_undecided else ("all",)
        for variant in variants:
            decisive = variant == "decisive"
            entry["human_human"][variant] = agreement(
                _pairs(by_item, question, None, people, decisive), symmetric=True, n_boot=n_boot, seed=seed
            )
        for judge in judges:
            mine: dict[str, Any] = {}
            for variant in variants:
                mine[variant] = agreement(
                    _pairs(by_item, question, judge, people, variant == "decisive"), n_boot=n_boot, seed=seed
                )
            mine["as_often_as_people"] = _as_often(mine[headline], entry["human_human"][headline])
            mine["per_bot"] = _per_bot(by_item, question, judge, people)
            if adapter.paired:
                try:
                    corrected = _corrected(dataset, adapter, judge, labels, people, question)
                except (ValueError, np.linalg.LinAlgError) as exc:  # too little data for a fit
                    corrected = {"note": f"no judge-corrected intervals: {exc}"}
                if corrected is not None:
                    mine["judge_corrected"] = corrected
            entry["judges"][judge] = mine
        section["questions"][question] = entry
    section["verdicts"] = {j: _sentence(j, section["questions"], headline) for j in judges}
    section["verdict"] = " ".join(section["verdicts"].values())
    per_judge: dict[str, Any] = {}
    for judge in judges:
        info: dict[str, Any] = {"failed_answers": _failures(dataset, judge)}
        if adapter.paired:
            info["position_bias"] = _position(dataset, judge, labels, people)
            length = _length(labels, judge, people)
            if length is not None:
                info["length_preference"] = length
        per_judge[judge] = info
    section["bias"] = per_judge
    if adapter.paired:
        section["position_note"] = POSITION_NOTE
    return section
