"""Chatbot Arena battles: Bradley–Terry leaderboard with ties, intervals, win rates, battle counts.

Judgment values (question ``battle``): {"model_a", "model_b", "winner": "model_a" | "model_b" | "tie"
| "tie (bothbad)", "turn"?}. Both kinds of tie count as half a win for each model, as Chatbot Arena
does (so a tie pulls two ratings together). Battles of a model against itself carry no information
and are dropped. Votes of annotators on of an LLM judge (``--judges`` files, `dialeval judge`) are kept out of
the leaderboard and set against the crowd under ``judges``.

Votes collected live (methods/arena/protocol.py) have the same shape plus ``anonymous``: a vote cast
after a bot named itself (``"anonymous": false``) is left out of the leaderboard and counted under
``non_anonymous``. With turn numbers, ``turn_curve`` gives each model's win rate per turn (ties half).

Intervals, both at level `ci`: a percentile bootstrap over battles (``ci_low``/``ci_high``, with
the central interval of each model's bootstrap rank, ``rank_interval``) and the sandwich (robust)
normal interval (``sandwich_low``/``sandwich_high``). ``rank`` is Arena's rank: 1 + the number of
models whose lower bound is above this model's upper bound (bootstrap bounds; ``rank_sandwich``
with the sandwich bounds).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from dialeval.analysis.shared import _filtered_annotators
from dialeval.records import Dataset, is_judge_annotator
from dialeval.stats.bradley_terry import (
    aggregate_votes,
    bradley_terry,
    ci_rank,
    fit_bt,
    pairwise_tables,
    sandwich_intervals,
    to_elo,
)

__all__ = ["analyze_arena", "battle_frame"]

QUESTION = "battle"
TIES_NOTE = (
    "Ties ('tie' and 'tie (bothbad)') count as half a win for each model, as Chatbot Arena does; "
    "battles of a model against itself are dropped."
)


COLUMNS = ["annotator", "battle", "model_a", "model_b", "winner", "turn", "anonymous"]


def battle_frame(dataset: Dataset, annotators: set[str] | None = None) -> pd.DataFrame:
    """One row per battle vote: annotator, battle, model_a, model_b, winner, turn, anonymous."""
    rows = []
    for j in dataset.judgments:
        if j.question != QUESTION or not isinstance(j.value, dict):
            continue
        if annotators is not None and j.annotator_id not in annotators:
            continue
        v = j.value
        rows.append(
            {
                "annotator": j.annotator_id,
                "battle": j.meta.get("battle"),
                "model_a": v.get("model_a"),
                "model_b": v.get("model_b"),
                "winner": v.get("winner"),
                "turn": v.get("turn"),
                "anonymous": v.get("anonymous") is not False,  # imported votes: anonymous
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def turn_curve(votes: pd.DataFrame) -> dict[str, dict[str, dict[str, float | int]]]:
    """Each model's win rate at each turn (ties half a win): {model: {turn: {"win_rate", "n"}}}."""
    v = votes.dropna(subset=["turn"])
    if v.empty:
        return {}
    turn = v["turn"].astype(int).to_numpy()
    score_a = np.where(v["winner"] == "model_a", 1.0, np.where(v["winner"] == "model_b", 0.0, 0.5))
    sides = pd.concat(
        [
            pd.DataFrame({"model": v["model_a"].to_numpy(), "turn": turn, "score": score_a}),
            pd.DataFrame({"model": v["model_b"].to_numpy(), "turn": turn, "score": 1.0 - score_a}),
        ]
    )
    table = sides.groupby(["model", "turn"])["score"].agg(["mean", "size"])
    out: dict[str, dict[str, dict[str, float | int]]] = {}
    for (model, k), row in table.iterrows():
        out.setdefault(str(model), {})[str(int(k))] = {"win_rate": round(float(row["mean"]), 4), "n": int(row["size"])}
    return out


def _matrix(names: list[str], values: np.ndarray, order: list[str], digits: int | None) -> dict[str, Any]:
    index = {n: i for i, n in enumerate(names)}
    out: dict[str, Any] = {}
    for row in order:
        cells: dict[str, float | int | None] = {}
        for col in order:
            x = values[index[row], index[col]]
            if row == col or np.isnan(x):
                cells[col] = None
            else:
                cells[col] = round(float(x), digits) if digits is not None else int(x)
        out[row] = cells
    return out


def _judges(dataset: Dataset, crowd: pd.DataFrame) -> dict[str, Any]:
    judges = [a.id for a in dataset.annotators if is_judge_annotator(a)]
    if not judges:
        return {}
    human = crowd.drop_duplicates("battle").set_index("battle")["winner"]
    out = {}
    for judge in judges:
        votes = battle_frame(dataset, {judge}).drop_duplicates("battle").set_index("battle")["winner"]
        both = pd.concat([human.rename("crowd"), votes.rename("judge")], axis=1, join="inner")
        decisive = both[both["crowd"].isin(["model_a", "model_b"]) & both["judge"].isin(["model_a", "model_b"])]
        out[judge] = {
            "battles": len(both),
            "agreement_non_tie": round(float((decisive["crowd"] == decisive["judge"]).mean()), 4)
            if len(decisive)
            else None,
            "non_tie_battles": len(decisive),
            "share_model_a": round(float((votes == "model_a").mean()), 4) if len(votes) else None,
            "share_tie": round(float(votes.str.startswith("tie").mean()), 4) if len(votes) else None,
        }
    return out


def analyze_arena(
    dataset: Dataset,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    exclude_annotators: list[str] | None = None,
) -> dict[str, Any]:
    """The arena report dict: systems (leaderboard), win_rates, battle_counts, outcomes, judges."""
    filtered = _filtered_annotators(dataset, exclude_annotators)
    crowd_ids = {a.id for a in dataset.annotators if not is_judge_annotator(a) and a.id not in filtered}
    known = {a.id for a in dataset.annotators}
    crowd_ids |= {j.annotator_id for j in dataset.judgments if j.annotator_id not in known}
    votes = battle_frame(dataset, crowd_ids)
    report: dict[str, Any] = {"method": "arena", "ties": TIES_NOTE, "systems": []}
    named = votes[~votes["anonymous"].astype(bool)]
    votes = votes[votes["anonymous"].astype(bool)]
    if len(named):
        report["non_anonymous"] = {
            "votes": int(len(named)),
            "note": "votes cast after a bot named itself: recorded, left out of the leaderboard",
        }
    if votes.empty:
        return report
    outcomes = Counter(votes["winner"])
    board = bradley_terry(votes, "model_a", "model_b", "winner", n_boot=n_boot, ci=ci, seed=seed)
    names, wins, ties = aggregate_votes(votes, "model_a", "model_b", "winner")
    theta = fit_bt(wins, ties)
    _, half = sandwich_intervals(wins, ties, theta, ci=ci)
    sand = pd.DataFrame({"sandwich_low": to_elo(theta - half), "sandwich_high": to_elo(theta + half)}, index=names)
    sand["rank_sandwich"] = ci_rank(sand["sandwich_low"], sand["sandwich_high"])
    board = board.join(sand, on="name")
    order = list(board["name"])
    battles, rate = pairwise_tables(wins, ties)
    systems = []
    for row in board.itertuples(index=False):
        systems.append(
            {
                "name": row.name,
                "n": int(row.n),
                "score": round(float(row.rating), 2),
                "ci_low": round(float(row.ci_low), 2),
                "ci_high": round(float(row.ci_high), 2),
                "sandwich_low": round(float(row.sandwich_low), 2),
                "sandwich_high": round(float(row.sandwich_high), 2),
                "rank": int(row.rank),
                "rank_interval": list(row.rank_ci),
                "rank_sandwich": int(row.rank_sandwich),
                "wins": int(row.wins),
                "losses": int(row.losses),
                "ties": int(row.ties),
            }
        )
    report.update(
        {
            "systems": systems,
            "win_rates": _matrix(names, rate, order, 3),
            "battle_counts": _matrix(names, battles, order, None),
            "outcomes": {k: int(outcomes.get(k, 0)) for k in ("model_a", "model_b", "tie", "tie (bothbad)")},
            "battles": int(len(votes)),
            "self_battles_dropped": int((votes["model_a"] == votes["model_b"]).sum()),
            "rating_scale": "Elo-like: 400 points = 10:1 odds, mean 1000",
            "intervals": {"level": ci, "bootstrap_rounds": n_boot, "seed": seed},
        }
    )
    turns = votes["turn"].dropna()
    if len(turns):
        report["turns"] = {str(int(k)): int(v) for k, v in sorted(Counter(turns.astype(int)).items())}
        report["turn_curve"] = turn_curve(votes)
    judges = _judges(dataset, votes)
    if judges:
        report["judges"] = judges
    return report
