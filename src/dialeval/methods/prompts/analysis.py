"""Prompt-set comparison analysis: the answer first (each system's win rate against the baseline,
ties half, with intervals), the Bradley-Terry leaderboard, and both per prompt category.

Judgment values (question "overall", and one question per criterion): the arena's shape,
{"model_a" (shown as A), "model_b", "winner": "model_a" | "model_b" | "tie" | "tie (bothbad)",
"prompt_id", "conversation_a", "conversation_b"}. Practice and attention checks ("onboarding",
"check"), LLM judges and annotators filtered by quality control are left out.

Win rate of X against Y: the mean over votes of 1 (X won), 0.5 (tie or both bad), 0 (Y won). The
votes on one prompt are not independent (several people, one item): the variance clustered by
prompt gives a design effect, and the interval is Wilson's score interval at the effective number
of votes (n / design effect); p is the score test of 0.5 at that effective n (two-sided).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from dialeval.analysis.ranking import (
    provisional,
    ranking_options,
    robustness_audit,
    segment_boards,
    style_of_votes,
    tie_model_board,
    tie_section,
    tiers,
)
from dialeval.analysis.shared import filtered_annotator_ids, pairwise_stopping
from dialeval.records import Dataset, is_judge_annotator
from dialeval.stats.bradley_terry import aggregate_votes, bradley_terry, fit_bt
from dialeval.stats.style import length_controlled, style_features

__all__ = ["analyze_prompts", "answer_pairs", "no_ranking", "vote_frame"]

QUESTION = "overall"
NOT_COMPARISONS = ("onboarding", "check")
TIES_NOTE = "Ties and 'both bad' count as half a win for each system (as Chatbot Arena and AlpacaEval count ties)."
COLUMNS = [
    "annotator",
    "question",
    "prompt_id",
    "category",
    "model_a",
    "model_b",
    "winner",
    "winner_bot",
    "guided",
    "conversation_a",
    "conversation_b",
    "reason",
    "unit",
]


def vote_frame(dataset: Dataset, exclude_annotators: list[str] | None = None) -> pd.DataFrame:
    """One row per kept vote of a person (every question but the checks)."""
    filtered = filtered_annotator_ids(dataset, exclude_annotators)
    judges = {a.id for a in dataset.annotators if is_judge_annotator(a)}
    rows = []
    for j in dataset.judgments:
        v = j.value
        if j.question in NOT_COMPARISONS or (j.meta or {}).get("check") or not isinstance(v, dict):
            continue
        if j.annotator_id in filtered or j.annotator_id in judges:
            continue
        if not v.get("model_a") or not v.get("model_b") or v["model_a"] == v["model_b"]:
            continue
        rows.append(
            {
                "annotator": j.annotator_id,
                "question": j.question,
                "prompt_id": v.get("prompt_id"),
                "category": (j.meta or {}).get("category") or "(none)",
                "model_a": v["model_a"],
                "model_b": v["model_b"],
                "winner": v.get("winner"),
                "winner_bot": v.get(v.get("winner")) if v.get("winner") in ("model_a", "model_b") else None,
                "guided": (j.meta or {}).get("guided"),
                "conversation_a": v.get("conversation_a"),
                "conversation_b": v.get("conversation_b"),
                "reason": j.justification,
                "unit": j.unit_id,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _score(votes: pd.DataFrame, system: str) -> np.ndarray:
    """Per vote: 1 when `system` won, 0 when it lost, 0.5 for a tie or both bad."""
    side = np.where(votes["model_a"] == system, "model_a", "model_b")
    won = votes["winner"].to_numpy() == side
    lost = votes["winner"].isin(["model_a", "model_b"]).to_numpy() & ~won
    return np.where(won, 1.0, np.where(lost, 0.0, 0.5))


def win_rate(votes: pd.DataFrame, system: str, other: str, ci: float = 0.95) -> dict[str, Any] | None:
    """`system`'s win rate against `other` (ties half), its interval and p (clustered by prompt)."""
    pair = votes[
        ((votes["model_a"] == system) & (votes["model_b"] == other))
        | ((votes["model_a"] == other) & (votes["model_b"] == system))
    ]
    n = len(pair)
    if not n:
        return None
    x = _score(pair, system)
    rate = float(x.mean())
    clusters = pd.Series(x - rate).groupby(pair["prompt_id"].fillna("").to_numpy()).sum().to_numpy()
    g = len(clusters)
    var_clustered = float((clusters**2).sum()) * (g / (g - 1) if g > 1 else 1.0) / n**2
    var_iid = float(x.var()) / n
    # design effect of the votes' clustering by prompt (at least 1): the effective number of votes
    n_eff = n / max(1.0, var_clustered / var_iid) if var_iid > 0 else float(min(n, g))
    z = float(sps.norm.ppf(0.5 + ci / 2))
    low, high = _wilson(rate, n_eff, z)
    p = float(2 * sps.norm.sf(abs(rate - 0.5) / math.sqrt(0.25 / n_eff)))  # score test of 0.5
    winner = pair["winner"]
    side_of = np.where(pair["model_a"] == system, "model_a", "model_b")
    return {
        "system": system,
        "against": other,
        "win_rate": round(rate, 4),
        "ci_low": round(low, 4),
        "ci_high": round(high, 4),
        "effective_n": round(n_eff, 1),
        "p": p,
        "n": n,
        "prompts": g,
        "wins": int((winner.to_numpy() == side_of).sum()),
        "losses": int((winner.isin(["model_a", "model_b"]).to_numpy() & (winner.to_numpy() != side_of)).sum()),
        "ties": int((winner == "tie").sum()),
        "both_bad": int((winner == "tie (bothbad)").sum()),
    }


def _wilson(rate: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score interval of a share `rate` of `n` (effective) observations."""
    denom = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denom
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def leaderboard(votes: pd.DataFrame, n_boot: int, ci: float, seed: int) -> list[dict[str, Any]]:
    """The Bradley-Terry leaderboard (Elo-like scale, ties half a win), bootstrap intervals."""
    if votes.empty:
        return []
    board = bradley_terry(votes, "model_a", "model_b", "winner", n_boot=n_boot, ci=ci, seed=seed)
    return [
        {
            "name": row.name,
            "n": int(row.n),
            "score": round(float(row.rating), 2),
            "ci_low": round(float(row.ci_low), 2),
            "ci_high": round(float(row.ci_high), 2),
            "rank": int(row.rank),
            "wins": int(row.wins),
            "losses": int(row.losses),
            "ties": int(row.ties),
        }
        for row in board.itertuples(index=False)
    ]


def _pairs(votes: pd.DataFrame) -> list[tuple[str, str]]:
    return sorted({tuple(sorted(p)) for p in zip(votes["model_a"], votes["model_b"])})


def _win_rates(votes: pd.DataFrame, baseline: str | None, ci: float) -> list[dict[str, Any]]:
    """Against the baseline when there is one, else every pair (the first named system's rate)."""
    if baseline is not None:
        others = sorted(set(votes["model_a"]) | set(votes["model_b"]) - {baseline})
        rows = [win_rate(votes, s, baseline, ci) for s in others]
    else:
        rows = [win_rate(votes, a, b, ci) for a, b in _pairs(votes)]
    return sorted((r for r in rows if r), key=lambda r: -r["win_rate"])


def vote_label(row: Any) -> str:  # a vote table's row (itertuples: a namedtuple of its columns)
    """A vote as a label comparable across people who saw the sides in other orders."""
    if row.winner in ("model_a", "model_b"):
        return str(row.winner_bot)
    return "both bad" if row.winner == "tie (bothbad)" else "tie"


def people_agreement(votes: pd.DataFrame, n_boot: int, level: float, seed: int) -> dict[str, Any]:
    """Agreement of people with each other on items judged more than once (every pair of their
    votes on one item): raw agreement and Fleiss' kappa (Cohen's, both orders), item-bootstrap
    intervals; `decisive` keeps only the votes for one answer."""
    from dialeval.stats.rater_agreement import agreement

    labelled = votes.assign(label=[vote_label(r) for r in votes.itertuples(index=False)])
    key = [
        labelled["prompt_id"],
        labelled[["model_a", "model_b"]].min(axis=1),
        labelled[["model_a", "model_b"]].max(axis=1),
    ]
    out = {}
    for name, part in (("all", labelled), ("decisive", labelled[labelled["winner"].isin(["model_a", "model_b"])])):
        groups = part.groupby([k.loc[part.index] for k in key])["label"]
        items = [list(itertools.combinations(list(g), 2)) for _, g in groups if len(g) > 1]
        out[name] = agreement(items, symmetric=True, n_boot=n_boot, level=level, seed=seed)
    return out


def length_preference(votes: pd.DataFrame, dataset: Dataset, level: float) -> dict[str, Any] | None:
    """Share of decisive votes that chose the longer answer (characters of the system's turns),
    with a two-sided binomial test of one half; None when the answers' text is not there."""
    from dialeval.stats.rater_agreement import share_test

    length = {c.id: sum(len(t.text) for t in c.turns if t.bot) for c in dataset.conversations}
    decisive = votes[votes["winner"].isin(["model_a", "model_b"])]
    longer = []
    for r in decisive.itertuples(index=False):
        la, lb = length.get(str(r.conversation_a)), length.get(str(r.conversation_b))
        if la is None or lb is None or la == lb:
            continue
        longer.append((la > lb) == (r.winner == "model_a"))
    if not longer:
        return None
    k = int(sum(longer))
    return {"measure": "share of decisive votes for the longer answer", **share_test(k, len(longer), 0.5, level)}


def _answer_text(dataset: Dataset) -> dict[str, str]:
    """Each answer conversation's assistant text (what the style covariates are computed on)."""
    return {c.id: "\n\n".join(t.text for t in c.turns if t.bot) for c in dataset.conversations}


def _ranking_sections(
    dataset: Dataset,
    votes: pd.DataFrame,
    baseline: str | None,
    win_rates: list[dict[str, Any]],
    n_boot: int,
    ci: float,
    seed: int,
) -> dict[str, Any]:
    """The leaderboard with the study's tie model, tiers and provisional marks, the tie models' fit,
    the robustness audit, style control and the length-controlled win rate against the baseline
    (analysis/ranking.py, stats/style.py)."""
    options = ranking_options(dataset.meta.get("config"))
    tie_model = options["ties"]
    ranked = votes[~votes["winner"].astype(str).str.startswith("tie")] if tie_model == "ignore" else votes
    systems = leaderboard(ranked, n_boot, ci, seed)
    names, wins, ties = aggregate_votes(ranked, "model_a", "model_b", "winner")
    if tie_model in ("davidson", "rao-kupper") and len(names) > 1:
        fitted = tie_model_board(names, wins, ties, tie_model, ci, n_boot, seed)
        index = {n: k for k, n in enumerate(names)}
        for row in systems:
            k = index[row["name"]]
            row.update(
                score=round(float(fitted["rating"][k]), 2),
                ci_low=round(float(fitted["ci_low"][k]), 2),
                ci_high=round(float(fitted["ci_high"][k]), 2),
                rank=int(fitted["rank"][k]),
            )
        systems.sort(key=lambda r: (-r["score"], r["name"]))
    marks = provisional(
        [r["n"] for r in systems], [r["ci_low"] for r in systems], [r["ci_high"] for r in systems], options
    )
    for row, tier, mark in zip(
        systems,
        tiers([r["score"] for r in systems], [r["ci_low"] for r in systems], [r["ci_high"] for r in systems]),
        marks,
    ):
        row["tier"], row["provisional"] = tier, mark
    out: dict[str, Any] = {"systems": systems, "ranking": {**options, "rank": "1 + the number of systems wholly above"}}
    if ranked is votes:  # ties half: the same counts
        all_names, all_wins, all_ties = names, wins, ties
    else:
        all_names, all_wins, all_ties = aggregate_votes(votes, "model_a", "model_b", "winner")
    section = tie_section(all_names, all_wins, all_ties, tie_model)
    if section is not None:
        out["tie_model"] = section
    if options["robustness"] and len(names) > 1:
        out["robustness"] = robustness_audit(
            names, wins, ties, fit_bt(wins, ties), board=[row["name"] for row in systems]
        )
    text = _answer_text(dataset)
    texted = votes[votes["conversation_a"].isin(text.keys()) & votes["conversation_b"].isin(text.keys())]
    names_on_board = {row["name"] for row in systems}
    texted = texted[texted["model_a"].isin(names_on_board) & texted["model_b"].isin(names_on_board)]
    if len(texted):
        features_a = np.array([style_features(text[c]) for c in texted["conversation_a"]])
        features_b = np.array([style_features(text[c]) for c in texted["conversation_b"]])
        style = style_of_votes(
            systems, texted["model_a"], texted["model_b"], texted["winner"], features_a, features_b, ci=ci
        )
        if style is not None:
            out["style_control"] = style
        if baseline is not None:  # AlpacaEval's length-controlled win rate beside the raw one
            words = {c: f[0] for c, f in zip(texted["conversation_a"], features_a)}
            words.update({c: f[0] for c, f in zip(texted["conversation_b"], features_b)})
            for row in win_rates:
                if row.get("against") != baseline:
                    continue
                mine = texted[(texted["model_a"] == row["system"]) & (texted["model_b"] == baseline)]
                theirs = texted[(texted["model_b"] == row["system"]) & (texted["model_a"] == baseline)]
                y = np.concatenate([_side_score(mine["winner"], "model_a"), _side_score(theirs["winner"], "model_b")])
                own = [words[c] for c in mine["conversation_a"]] + [words[c] for c in theirs["conversation_b"]]
                base = [words[c] for c in mine["conversation_b"]] + [words[c] for c in theirs["conversation_a"]]
                lc = length_controlled(y, np.array(own, float), np.array(base, float))
                if lc["lc_win_rate"] is not None:
                    row["lc_win_rate"] = round(float(lc["lc_win_rate"]), 4)
                    row["length_coef"] = round(float(lc["length_coef"] or 0.0), 4)
    return out


def _side_score(winner: pd.Series, side: str) -> np.ndarray:
    w = winner.to_numpy()
    other = "model_b" if side == "model_a" else "model_a"
    return np.where(w == side, 1.0, np.where(w == other, 0.0, 0.5))


def _annotator_model(dataset: Dataset, votes: pd.DataFrame, n_boot: int, ci: float, seed: int) -> dict[str, Any]:
    """Crowd-BT beside plain Bradley-Terry with the voter screen, and Dawid-Skene / MACE on the items
    several people judged (analysis/annotators.py); the label of a vote is the system it chose (or
    a kind of tie), so the two side orders of one item compare equal."""
    from dialeval.analysis.annotators import annotator_options, pairwise_labels, pairwise_model_section
    from dialeval.analysis.annotators import vote_frame as model_votes

    sides = zip(votes["prompt_id"], votes["model_a"], votes["model_b"])
    pair = [f"{p}|{'|'.join(sorted((a, b)))}" for p, a, b in sides]
    chosen = [str(w if w is not None and w == w else t) for w, t in zip(votes["winner_bot"], votes["winner"])]
    items = votes.assign(item=pair, label=chosen)
    return pairwise_model_section(
        model_votes(votes, "model_a", "model_b"),
        pairwise_labels(items, "item", "label"),
        options=annotator_options(dataset.meta.get("config")),
        n_boot=min(n_boot, 200),
        ci=ci,
        seed=seed,
    )


def analyze_prompts(
    dataset: Dataset,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    exclude_annotators: list[str] | None = None,
) -> dict[str, Any]:
    config = dataset.meta.get("config") or {}
    baseline = (config.get("protocol") or {}).get("baseline")
    all_votes = vote_frame(dataset, exclude_annotators)
    votes = all_votes[all_votes["question"] == QUESTION]
    report: dict[str, Any] = {"method": "prompts", "ties": TIES_NOTE, "systems": [], "baseline": baseline}
    if votes.empty:
        unranked = no_ranking(dataset, config)
        if unranked is not None:
            report["no_ranking"] = unranked
        return report
    if baseline is not None and baseline not in set(votes["model_a"]) | set(votes["model_b"]):
        baseline = None
        report["baseline"] = None
    report["win_rates"] = _win_rates(votes, baseline, ci)
    report.update(_ranking_sections(dataset, votes, baseline, report["win_rates"], n_boot, ci, seed))
    report["votes"] = {
        "n": int(len(votes)),
        "items": int(votes.groupby(["prompt_id", votes[["model_a", "model_b"]].min(axis=1)]).ngroups),
        "prompts": int(votes["prompt_id"].nunique()),
        "annotators": int(votes["annotator"].nunique()),
        "outcomes": {k: int((votes["winner"] == k).sum()) for k in ("model_a", "model_b", "tie", "tie (bothbad)")},
    }
    categories = {}
    for category, part in votes.groupby("category"):
        categories[str(category)] = {
            "n": int(len(part)),
            "prompts": int(part["prompt_id"].nunique()),
            "win_rates": _win_rates(part, baseline, ci),
            "systems": leaderboard(part, min(n_boot, 200), ci, seed),
        }
    if len(categories) > 1 or "(none)" not in categories:
        report["by_category"] = categories
        # the pairs a category reverses significantly (analysis/ranking.py: simultaneous intervals)
        overall = {row["name"]: row["score"] for row in report["systems"]}
        boards = segment_boards(votes, "category", overall, n_boot=min(n_boot, 200), ci=ci, seed=seed)
        for category, board in boards.items():
            if category in categories:
                categories[category]["differs"] = board.get("differs", [])
    platform = {a.id: a.platform for a in dataset.annotators}
    by_platform = votes.assign(platform=votes["annotator"].map(platform)).dropna(subset=["platform"])
    if by_platform["platform"].nunique() > 1:
        overall = {row["name"]: row["score"] for row in report["systems"]}
        report["by_platform"] = segment_boards(
            by_platform, "platform", overall, n_boot=min(n_boot, 200), ci=ci, seed=seed
        )
    criteria = {}
    for question, part in all_votes[all_votes["question"] != QUESTION].groupby("question"):
        criteria[str(question)] = {
            "n": int(len(part)),
            "win_rates": _win_rates(part, baseline, ci),
            "systems": leaderboard(part, min(n_boot, 200), ci, seed),
        }
    if criteria:
        report["by_criterion"] = criteria
    report["annotator_model"] = _annotator_model(dataset, votes, n_boot, ci, seed)
    report["people_agreement"] = people_agreement(votes, n_boot=min(n_boot, 1000), level=ci, seed=seed)
    lengths = length_preference(votes, dataset, ci)
    if lengths is not None:
        report["length_preference"] = lengths
    # the anytime-valid stopping table of the study's `adaptive:` config (monitoring only when off),
    # replayed from the kept votes in the order they were made, as the scheduler saw them
    outcomes = list(zip(votes["model_a"], votes["model_b"], votes["winner_bot"], votes["annotator"], votes["guided"]))
    report["stopping"] = pairwise_stopping(dataset, "prompts", outcomes, question=QUESTION)
    if report["stopping"].get("used_for_stopping"):
        rows = {frozenset((r["a"], r["b"])): r for r in report["stopping"].get("pairs") or []}
        for r in report["win_rates"]:  # collection stopped on the data: the fixed-n p is not valid
            row = rows.get(frozenset((r["system"], r["against"])))
            if row is not None:
                r["p_fixed_n"], r["p"] = r["p"], row["p_always_valid"]
    report["intervals"] = {
        "level": ci,
        "win_rate": "normal, clustered by prompt",
        "bootstrap_rounds": n_boot,
        "seed": seed,
    }
    return report


def no_ranking(dataset: Dataset, config: dict[str, Any]) -> dict[str, Any] | None:
    """Why no ranking can be made, when fewer than two systems have answers (a failed answer is no
    answer): {note, systems_with_answers, systems_without_answers}; None when two or more have."""
    answered = sorted({b for c in dataset.conversations if not c.error for b in c.bots if b and b != "human"})
    if len(answered) >= 2:
        return None
    compared = [str(b["name"]) for b in config.get("bots") or [] if isinstance(b, dict) and b.get("type") != "degraded"]
    missing = [name for name in compared if name not in answered]
    failed = sorted({b for c in dataset.conversations if c.error for b in c.bots if b in missing})
    how = (
        "(dialeval generate makes the answers of the study's bots, dialeval import answers brings answers "
        "made elsewhere), then collect votes."
    )
    if not failed:
        only_failed = ""
    elif failed == missing:
        only_failed = "only failed ones"
    else:
        only_failed = f"only failed ones from {_names(failed)}"
    if answered:
        note = f"No ranking: only one system has answers ({answered[0]}); a ranking needs at least two."
        if missing:
            note += f" No answers yet from {_names(missing)}" + (f" ({only_failed})" if only_failed else "")
            note += f": add them {how}"
    else:
        listed = "; ".join(part for part in (_names(missing) if missing else "", only_failed) if part)
        note = "No ranking: no system has answers yet" + (f" ({listed})" if listed else "")
        note += f"; a ranking needs at least two. Add their answers {how}"
    return {"note": note, "systems_with_answers": answered, "systems_without_answers": missing}


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def answer_pairs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's pairs: each win rate row, the winner first, effect with its interval."""
    from dialeval.report.answer import binomial_n_needed, pair, pct

    out = []
    for r in report.get("win_rates") or []:
        rate = r["win_rate"]
        first = rate >= 0.5
        a, b = (r["system"], r["against"]) if first else (r["against"], r["system"])
        low, high = (r["ci_low"], r["ci_high"]) if first else (1 - r["ci_high"], 1 - r["ci_low"])
        share = rate if first else 1 - rate
        level = int(100 * report.get("intervals", {}).get("level", 0.95))
        effect = f"win rate {pct(share)}, {level}% CI {pct(low)}–{pct(high)}, ties half"
        out.append(
            pair(
                a,
                b,
                effect,
                r["p"],
                r["n"],
                binomial_n_needed(share),
                unit="votes",
                no_difference=abs(share - 0.5) < 1e-9,
            )
        )
    return out
