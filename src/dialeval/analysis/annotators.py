"""The report's ``annotator_model`` section (every method with categorical labels) and the voter
screening of pairwise methods; the statistics are in stats/annotators.py.

What a method's analysis hands over:

- categorical labels, one row per (item, annotator, label) -- a Spot The Bot entity's human/bot/
  unsure, a feature's winner, an SM-Turn quality ticked or not, a pairwise choice: ``label_section``
  fits Dawid–Skene and MACE and gives each annotator's reliability with a bootstrap interval over
  items, and the items whose model label differs from the majority vote;
- pairwise votes (annotator, a, b, score): ``pairwise_section`` adds the Crowd-BT leaderboard
  (reliability-weighted, labelled so) beside the plain Bradley–Terry one, each voter's Crowd-BT
  reliability, and the voter screen (stats.annotators.voter_eprocess) with alpha from the study.

LLM judges are one more annotator here (marked ``judge``): their reliability is estimated like
anybody's, while the methods' leaderboards still leave them out.

The study file's ``annotators:`` block (config.AnnotatorsConfig) sets alpha, whether flagged voters
are left out of the leaderboard, and the cap on votes per prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dialeval.stats.annotators import (
    bootstrap_reliability,
    crowd_bt,
    dawid_skene,
    mace,
    majority_vote,
    pair_cells,
    pair_sums,
    screen_votes,
)
from dialeval.stats.bradley_terry import bootstrap_bt, ci_rank, fit_bt, to_elo

__all__ = [
    "DEFAULTS",
    "annotator_options",
    "cap_prompts",
    "label_section",
    "pairwise_section",
    "model_judges",
    "prompt_clusters",
    "screen_voters",
]

DEFAULTS: dict[str, Any] = {
    "models": True,
    "screening_alpha": 0.05,
    "screening_per": "study",
    "exclude_flagged": False,
    "prompt_cap": None,
    "near_duplicate": 0.8,
    "daily_cap": None,
}
# bootstrap rounds of the reliability intervals (each refits the model): enough for a 95 % interval
# to two digits, bounded so a 100k-label study reports in seconds
RELIABILITY_BOOT = 40
MAX_LISTED_ITEMS = 50  # items listed where the model and the majority differ (all are counted)
MAX_BOOT_LABELS = 100_000  # above this many labels the intervals are skipped (said in the section)


# the platform judges/audit.py gives a judge whose verdicts the statistics count (--include-judges)
COUNTED_JUDGE_PLATFORM = "judge-counted"


def model_judges(dataset: Any) -> list[str]:
    """The LLM judges among a data set's annotators, counted (--include-judges) or not: marked
    `judge` in the annotator tables."""
    from dialeval.records import is_judge_annotator

    return [a.id for a in dataset.annotators if is_judge_annotator(a) or a.platform == COUNTED_JUDGE_PLATFORM]


def annotator_options(config: dict[str, Any] | None) -> dict[str, Any]:
    given = dict((config or {}).get("annotators") or {})
    return {**DEFAULTS, **{k: v for k, v in given.items() if v is not None}}


def _codes(values: Iterable[Any]) -> tuple[list[Any], np.ndarray]:
    # an object column as it is: the same elements as its list, without a million-item list
    s = values if isinstance(values, pd.Series) and values.dtype == object else pd.Series(list(values), dtype=object)
    codes, uniques = pd.factorize(s.astype(str), sort=True)
    return list(uniques), codes


def label_section(
    rows: pd.DataFrame,
    *,
    judges: Iterable[str] = (),
    classes: Sequence[str] | None = None,
    n_boot: int = RELIABILITY_BOOT,
    seed: int = 0,
) -> dict[str, Any] | None:
    """Dawid–Skene and MACE on rows[item, annotator, label]; None with fewer than two annotators."""
    rows = rows.dropna(subset=["item", "annotator", "label"])
    if rows.empty or rows["annotator"].nunique() < 2 or not rows["item"].duplicated().any():
        return None  # a label model learns from items labelled more than once
    items, item_codes = _codes(rows["item"])
    people, who = _codes(rows["annotator"])
    if classes is None:
        classes = sorted({str(x) for x in rows["label"]})
    index = {c: k for k, c in enumerate(classes)}
    y = np.array([index[str(x)] for x in rows["label"]])
    n_items, A, K = len(items), len(people), len(classes)
    ds = dawid_skene(item_codes, who, y, n_items, A, K)
    mc = mace(item_codes, who, y, n_items, A, K, seed=seed)
    mv = majority_vote(item_codes, y, n_items, K)
    if len(rows) <= MAX_BOOT_LABELS and n_boot > 0:
        # each round refits from scratch: a looser stop and one MACE start keep the rounds cheap
        ds_lo, ds_hi = bootstrap_reliability(
            lambda *x: dawid_skene(*x, max_iter=30, tol=1e-4),
            item_codes,
            who,
            y,
            n_items,
            A,
            K,
            n_boot=n_boot,
            seed=seed,
        )
        mc_lo, mc_hi = bootstrap_reliability(
            lambda *x: mace(*x, restarts=1, max_iter=30, tol=1e-5, seed=seed),
            item_codes,
            who,
            y,
            n_items,
            A,
            K,
            n_boot=n_boot,
            seed=seed,
        )
        boots = n_boot
    else:
        ds_lo = ds_hi = mc_lo = mc_hi = np.full(A, np.nan)
        boots = 0
    counts = np.bincount(who, minlength=A)
    judge_set = {str(j) for j in judges}
    majority = mv.argmax(axis=1)[item_codes] == y
    annotators = []
    for k in np.argsort(ds.reliability):  # least reliable first: the ones worth a look
        annotators.append(
            {
                "annotator": str(people[k]),
                "labels": int(counts[k]),
                "judge": str(people[k]) in judge_set,
                "agrees_with_majority": round(float(majority[who == k].mean()), 4),
                "dawid_skene": _interval(ds.reliability[k], ds_lo[k], ds_hi[k]),
                "mace": _interval(mc.reliability[k], mc_lo[k], mc_hi[k]),
            }
        )
    n_labels = np.bincount(item_codes, minlength=n_items)
    top_mv, top_ds, top_mc = mv.argmax(axis=1), ds.labels, mc.labels
    # an item tied under the majority vote has no majority label to differ from
    sorted_mv = np.sort(mv, axis=1)
    clear = (sorted_mv[:, -1] - sorted_mv[:, -2] > 1e-9) if K > 1 else np.ones(n_items, bool)
    differ = np.flatnonzero(clear & ((top_ds != top_mv) | (top_mc != top_mv)))
    listed = [
        {
            "item": str(items[i]),
            "labels": int(n_labels[i]),
            "majority": classes[top_mv[i]],
            "majority_share": round(float(mv[i, top_mv[i]]), 3),
            "dawid_skene": classes[top_ds[i]],
            "dawid_skene_p": round(float(ds.posteriors[i, top_ds[i]]), 3),
            "mace": classes[top_mc[i]],
        }
        for i in differ[np.argsort(-n_labels[differ], kind="stable")][:MAX_LISTED_ITEMS]
    ]
    return {
        "classes": list(classes),
        "items": n_items,
        "labels": int(len(rows)),
        "multiply_labelled_items": int((n_labels > 1).sum()),
        "annotators": annotators,
        "differs_from_majority": {"n": int(len(differ)), "items": listed},
        "bootstrap_rounds": boots,
        "note": (
            "dawid_skene: the chance an annotator's label is the true one (Dawid & Skene 1979); mace: the "
            "chance they knew the label rather than guessed (Hovy et al. 2013, MACE). Intervals: "
            f"{boots} bootstrap rounds over items (none when 0). An annotator who labelled only items "
            "nobody else labelled is estimated from the model's prior alone."
        ),
    }


def _interval(value: float, lo: float, hi: float) -> dict[str, float | None]:
    def r(x: float) -> float | None:
        return None if not np.isfinite(x) else round(float(x), 4)

    return {"reliability": r(value), "ci_low": r(lo), "ci_high": r(hi)}


# -- pairwise ----------------------------------------------------------------------------------------


def _score(winner: Any, a: Any, b: Any) -> float:
    if winner in ("model_a", "a", "left") or (winner == a and winner != b):
        return 1.0
    if winner in ("model_b", "b", "right") or (winner == b and winner != a):
        return 0.0
    return 0.5


def _scores(winner: Any, a: Any, b: Any) -> np.ndarray:
    """_score of every vote, column-wise: the same tests (an alias, or the winner equal to one side
    and not the other: Python's == per element), in the same order."""
    w, x, y = (np.asarray(c, dtype=object) for c in (winner, a, b))
    chosen = pd.Series(w, dtype=object)
    to_a, to_b = w == x, w == y
    first = chosen.isin(["model_a", "a", "left"]).to_numpy() | (to_a & ~to_b)
    second = chosen.isin(["model_b", "b", "right"]).to_numpy() | (to_b & ~to_a)
    return np.where(first, 1.0, np.where(second, 0.0, 0.5))


def vote_frame(votes: pd.DataFrame, a: str = "a", b: str = "b", winner: str = "winner") -> pd.DataFrame:
    """annotator, a, b, score (1: a won, 0: b won, 0.5: tie), self-battles dropped, order kept."""
    different = votes[a] != votes[b]
    v = votes if bool(different.all()) else votes[different]  # no copy of a million votes for nothing
    return pd.DataFrame(
        {
            "annotator": v["annotator"].astype(str).to_numpy(),
            "a": v[a].astype(str).to_numpy(),
            "b": v[b].astype(str).to_numpy(),
            "score": _scores(v[winner], v[a], v[b]),
        }
    )


def screen_voters(
    votes: pd.DataFrame,
    alpha: float,
    per: str = "study",
    codes: tuple[list[Any], np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    """The per-voter e-process (stats.annotators.screen_votes) on vote_frame rows: {alpha, per,
    threshold, flagged, voters (the 20 highest e-values)}. `codes`: (people, who, a, b) as this
    function would make them (the voters by _codes, the systems by their names' sorted order), when
    the caller has them already."""
    if codes is not None:
        people, who, first, second = codes
    else:
        people, who = _codes(votes["annotator"]) if not votes.empty else ([], np.zeros(0, int))
        # the systems coded in their names' sorted order (what screen_votes would do, by hash not sort)
        systems, _ = pd.factorize(pd.concat([votes["a"], votes["b"]], ignore_index=True).astype(str), sort=True)
        first, second = systems[: len(votes)], systems[len(votes) :]
    e, threshold, kinds = screen_votes(first, second, votes["score"].to_numpy(float), who, alpha=alpha, per=per)
    n = np.bincount(who, minlength=len(people))
    hit = e >= threshold
    top = np.argsort(-e, kind="stable")[:20]
    return {
        "alpha": alpha,
        "per": per,
        "threshold": float(f"{threshold:.4g}"),
        "flagged": sorted(str(people[k]) for k in np.flatnonzero(hit)),
        "voters": [
            {"annotator": str(people[k]), "votes": int(n[k]), "e_value": float(f"{e[k]:.4g}"), "flagged": bool(hit[k])}
            for k in top
        ],
        "note": (
            "per-voter sequential test (as Chatbot Arena screens voters): the product over a voter's "
            f"votes of 1/(K p), p the share of that outcome in the pair's other votes, K = {kinds} "
            "outcome kinds; flagged when it passes the threshold, 1/alpha per voter or n/alpha for the "
            "study's n voters (anytime-valid). Flagged voters are listed, never deleted."
        ),
    }


def _board(names: list[str], wins: np.ndarray, n_boot: int, ci: float, seed: int) -> dict[str, np.ndarray]:
    theta = fit_bt(wins)
    if n_boot < 1:  # no intervals asked for: point ratings as their own bounds
        lo = hi = to_elo(theta)
        return {"rating": to_elo(theta), "ci_low": lo, "ci_high": hi, "rank": ci_rank(lo.tolist(), hi.tolist())}
    draws = bootstrap_bt(wins, None, n_boot=n_boot, seed=seed, theta0=theta)
    alpha = (1 - ci) / 2
    lo, hi = np.quantile(to_elo(draws), [alpha, 1 - alpha], axis=0)
    return {"rating": to_elo(theta), "ci_low": lo, "ci_high": hi, "rank": ci_rank(lo.tolist(), hi.tolist())}


def pairwise_section(
    votes: pd.DataFrame,
    *,
    options: dict[str, Any],
    judges: Iterable[str] = (),
    n_boot: int = 200,
    ci: float = 0.95,
    seed: int = 0,
) -> dict[str, Any] | None:
    """Crowd-BT beside plain Bradley–Terry on vote_frame rows (judges' votes left out of both),
    each voter's reliability, and the voter screen."""
    judge_set = {str(j) for j in judges}
    crowd = votes[~votes["annotator"].isin(judge_set)].reset_index(drop=True)
    if crowd.empty:
        return None
    names = sorted(set(crowd["a"]) | set(crowd["b"]))
    if len(names) < 2:
        return None
    idx = {n: k for k, n in enumerate(names)}
    people, who = _codes(crowd["annotator"])
    a = crowd["a"].map(idx).to_numpy()
    b = crowd["b"].map(idx).to_numpy()
    s = crowd["score"].to_numpy(dtype=float)
    plain = pair_sums(pair_cells(a, b, len(names)), s, len(names))
    boots = min(n_boot, 200)
    unweighted = _board(names, plain, boots, ci, seed)
    fit = crowd_bt(a, b, s, who, len(names), len(people))
    weighted = _board(names, fit.wins, boots, ci, seed)
    order = np.argsort(-unweighted["rating"], kind="stable")
    board = []
    for k in order:
        board.append(
            {
                "name": names[k],
                "rating": round(float(unweighted["rating"][k]), 2),
                "ci_low": round(float(unweighted["ci_low"][k]), 2),
                "ci_high": round(float(unweighted["ci_high"][k]), 2),
                "rank": int(unweighted["rank"][k]),
                "weighted_rating": round(float(weighted["rating"][k]), 2),
                "weighted_ci_low": round(float(weighted["ci_low"][k]), 2),
                "weighted_ci_high": round(float(weighted["ci_high"][k]), 2),
                "weighted_rank": int(weighted["rank"][k]),
            }
        )
    n_votes = np.bincount(who, minlength=len(people))
    agree = n_votes * fit.eta
    # Beta posterior of each voter's eta given the fitted strengths (not refitted per draw). Its
    # quantiles by scipy.special.betaincinv: what scipy.stats.beta.ppf returns (both Boost's inverse
    # incomplete beta; the same bits on 400k draws of these shapes) without scipy.stats' 1 s import
    from scipy.special import betaincinv

    lo = betaincinv(agree + 1, n_votes - agree + 1, (1 - ci) / 2)
    hi = betaincinv(agree + 1, n_votes - agree + 1, 1 - (1 - ci) / 2)
    voters = [
        {"annotator": str(people[k]), "votes": int(n_votes[k]), **_interval(fit.eta[k], lo[k], hi[k])}
        for k in np.argsort(fit.eta)[:50]
    ]
    # the voters and systems coded as screen_voters codes them: the same codes (names sorted)
    screening = screen_voters(
        crowd, float(options["screening_alpha"]), options["screening_per"], codes=(people, who, a, b)
    )
    out: dict[str, Any] = {
        "votes": int(len(crowd)),
        "leaderboard": board,
        "weighted_order": [names[k] for k in np.argsort(-weighted["rating"], kind="stable")],
        "order_changes": [r["name"] for r in board if r["rank"] != r["weighted_rank"]],
        "voters": voters,
        "screening": screening,
        "note": (
            "rating: plain Bradley-Terry (the published procedure, every vote counts the same); "
            "weighted_*: reliability-weighted Crowd-BT (Chen et al. 2013, WSDM), each voter agreeing with "
            "the preference with probability eta (a voter near 0.5 answers at random, below 0.5 reverses "
            "it). Intervals: bootstrap over votes, Crowd-BT's with the voters' eta held at the fit. "
            "Voters' intervals: Beta posterior of eta given the fitted strengths."
        ),
    }
    if screening["flagged"]:
        kept = crowd[~crowd["annotator"].isin(set(screening["flagged"]))]
        w = np.zeros((len(names), len(names)))
        np.add.at(w, (kept["a"].map(idx).to_numpy(), kept["b"].map(idx).to_numpy()), kept["score"].to_numpy())
        np.add.at(w, (kept["b"].map(idx).to_numpy(), kept["a"].map(idx).to_numpy()), 1 - kept["score"].to_numpy())
        without = _board(names, w, boots, ci, seed)
        out["without_flagged"] = {
            "votes": int(len(kept)),
            "order": [names[k] for k in np.argsort(-without["rating"], kind="stable")],
            "leaderboard": [
                {
                    "name": names[k],
                    "rating": round(float(without["rating"][k]), 2),
                    "ci_low": round(float(without["ci_low"][k]), 2),
                    "ci_high": round(float(without["ci_high"][k]), 2),
                    "rank": int(without["rank"][k]),
                }
                for k in np.argsort(-without["rating"], kind="stable")
            ],
        }
    return out


# -- prompts -----------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def _shingles(text: str, k: int = 3) -> set[str]:
    words = _WORD.findall(text.lower())
    if len(words) < k:
        return {" ".join(words)}
    return {" ".join(words[i : i + k]) for i in range(len(words) - k + 1)}


def prompt_clusters(prompts: Sequence[str | None], threshold: float = 0.8) -> list[int | None]:
    """A cluster id per prompt: the same text after case and whitespace folding is an exact
    duplicate; a Jaccard similarity of word 3-shingles >= threshold with a cluster's first prompt is
    a near duplicate. Prompts are compared only with prompts sharing a shingle (an inverted index),
    so the cost grows with the duplicates, not with the square of the prompts."""
    exact: dict[str, int] = {}
    heads: list[set[str]] = []
    postings: dict[str, list[int]] = {}
    out: list[int | None] = []
    for text in prompts:
        if not text or not str(text).strip():
            out.append(None)
            continue
        key = " ".join(str(text).lower().split())
        if key in exact:
            out.append(exact[key])
            continue
        sh = _shingles(key)
        seen: set[int] = set()
        found = None
        for g in sh:
            for c in postings.get(g, ()):
                if c in seen:
                    continue
                seen.add(c)
                inter = len(sh & heads[c])
                if inter / max(len(sh | heads[c]), 1) >= threshold:
                    found = c
                    break
            if found is not None:
                break
        if found is None:
            found = len(heads)
            heads.append(sh)
            for g in sh:
                postings.setdefault(g, []).append(found)
        exact[key] = found
        out.append(found)
    return out


def cap_prompts(
    prompts: Sequence[str | None], cap: int | None, threshold: float = 0.8
) -> tuple[np.ndarray, dict[str, Any]]:
    """Which votes to keep (a bool mask) when at most `cap` votes per prompt cluster count (the first
    ones, in the order given), with a summary of exact and near duplicates."""
    clusters = prompt_clusters(prompts, threshold)
    keep = np.ones(len(prompts), dtype=bool)
    seen: dict[int, int] = {}
    exact_keys: dict[str, int] = {}
    exact_dupes = 0
    for k, (text, c) in enumerate(zip(prompts, clusters)):
        if c is None:
            continue
        key = " ".join(str(text).lower().split())
        exact_dupes += exact_keys.get(key, 0) > 0
        exact_keys[key] = exact_keys.get(key, 0) + 1
        seen[c] = seen.get(c, 0) + 1
        if cap is not None and seen[c] > cap:
            keep[k] = False
    sizes = sorted(seen.values(), reverse=True)
    return keep, {
        "votes_with_prompt": int(sum(1 for c in clusters if c is not None)),
        "clusters": len(seen),
        "exact_duplicates": int(exact_dupes),
        "near_duplicates": int(sum(sizes) - len(sizes) - exact_dupes),
        "largest_cluster": sizes[0] if sizes else 0,
        "cap": cap,
        "dropped_by_cap": int((~keep).sum()),
        "threshold": threshold,
    }


# -- what the pairwise methods' analyses call ------------------------------------------------------------


def pairwise_labels(frame: pd.DataFrame, item: str, choice: str, other: str | None = None) -> pd.DataFrame:
    """rows[item, annotator, label] for the label models from a pairwise frame. With `other` (the
    option not chosen) the label is 'first' or 'second' by the options' name order, so it means the
    same for every annotator of the item; else the `choice` column as it is (the arena's model_a /
    model_b / tie: a side, which lets the confusion matrices show a position bias)."""
    if other is None:
        label = frame[choice].astype(str)
    else:
        chosen, rest = frame[choice].astype(str), frame[other].astype(str)
        label = pd.Series(np.where(chosen < rest, "first", "second"), index=frame.index)
    return pd.DataFrame({"item": frame[item].astype(str), "annotator": frame["annotator"].astype(str), "label": label})


def flagged(votes: pd.DataFrame, options: dict[str, Any]) -> list[str]:
    """The voters the screen flags (vote_frame rows)."""
    return screen_voters(votes, float(options["screening_alpha"]), options["screening_per"])["flagged"]


def pairwise_model_section(
    votes: pd.DataFrame,
    labels: pd.DataFrame | None,
    *,
    options: dict[str, Any],
    judges: Iterable[str] = (),
    excluded: Sequence[str] = (),
    n_boot: int = 200,
    ci: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The `annotator_model` section of a pairwise method: Crowd-BT beside plain BT with the screen
    (`pairwise`), and Dawid-Skene / MACE on the items judged (`labels`)."""
    if not options["models"]:
        return {"note": "annotator models off (annotators.models: false in the study file)"}
    out: dict[str, Any] = {}
    section = pairwise_section(votes, options=options, judges=judges, n_boot=n_boot, ci=ci, seed=seed)
    if section is not None:
        section["screening"]["excluded_from_leaderboard"] = sorted(excluded)
        out["pairwise"] = section
    if labels is not None:
        lab = label_section(labels, judges=judges, n_boot=min(n_boot, RELIABILITY_BOOT), seed=seed)
        if lab is not None:
            out["labels"] = lab
    if not out:
        out["note"] = "too few votes or annotators for an annotator model"
    return out


def winner_loser_votes(df: pd.DataFrame, winner: str, loser: str) -> pd.DataFrame:
    """vote_frame rows from a frame of (annotator, winner, loser) choices (ACUTE, PW-Turn)."""
    votes = pd.DataFrame({"annotator": df["annotator"], "a": df[winner], "b": df[loser], "winner": df[winner]})
    return vote_frame(votes)


def screen_choices(
    df: pd.DataFrame, winner: str, loser: str, options: dict[str, Any]
) -> tuple[pd.DataFrame, list[str]]:
    """The frame without the flagged voters' rows when the study excludes them (else unchanged)."""
    if not options["exclude_flagged"] or df.empty:
        return df, []
    out = flagged(winner_loser_votes(df, winner, loser), options)
    kept = df[~df["annotator"].astype(str).isin(set(out))]
    if kept.empty:  # every voter flagged: nothing to rank without them; the section says who
        return df, []
    return kept, out


def choice_model_section(
    dataset_config: dict[str, Any] | None,
    df: pd.DataFrame,
    *,
    winner: str,
    loser: str,
    item: Sequence[str],
    choice: str,
    other: str,
    judges: Iterable[str],
    excluded: Sequence[str],
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """The annotator_model section of a method whose frame has one row per choice (winner, loser
    bots; the item is the tuple of `item` columns; the label which of `choice` / `other` was chosen)."""
    options = annotator_options(dataset_config)
    if df.empty:
        return {"note": "no judgments"}
    labels = df.assign(item=[" / ".join(map(str, t)) for t in zip(*(df[c] for c in item))])
    return pairwise_model_section(
        winner_loser_votes(df, winner, loser),
        pairwise_labels(labels, "item", choice, other),
        options=options,
        judges=judges,
        excluded=excluded,
        n_boot=n_boot,
        seed=seed,
    )
