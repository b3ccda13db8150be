"""What every pairwise leaderboard adds to its Bradley–Terry ratings: the tie model it used, tiers
of systems the intervals cannot separate, provisional marks, and how many votes must go to reverse
its order (ACUTE, PW-Turn, arena, and any method with votes a / b / tie).

The study file's ``ranking:`` block (config.RankingConfig) chooses:

- ``ties``: ``half`` (a tie is half a win for each side, Chatbot Arena's MLE Elo and dialeval's
  default), ``ignore`` (ties dropped), ``davidson`` (Davidson 1970) or ``rao-kupper`` (Rao & Kupper
  1967), stats/ties.py. Whatever is used, the report gives both tie models' fitted parameter and
  log-likelihood and their predicted tie rate beside the observed one per pair.
- ``provisional_votes`` / ``provisional_width``: a system with fewer votes, or whose interval is
  wider (rating points), is marked provisional.
- ``robustness``: the data-dropping audit of stats/robustness.py (Huang et al., ICLR 2026) for the
  top rank and every adjacent pair.

Rank is Chatbot Arena's: 1 + the number of systems whose interval lies wholly above. Tiers walk the
board best first: a system joins the current tier while its interval overlaps the interval of the
tier's first (best) system, else it opens the next tier.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dialeval.stats.bradley_terry import ci_rank, to_elo
from dialeval.stats.robustness import votes_to_reverse
from dialeval.stats.ties import fit_tie_model, predicted_tie_rates, simulate_ratings

__all__ = ["DEFAULTS", "ranking_options", "robustness_audit", "tie_section", "tiers", "tie_model_board"]

DEFAULTS: dict[str, Any] = {
    "ties": "half",
    "provisional_votes": 100,
    "provisional_width": 100.0,
    "robustness": True,
}
# An order that a handful of votes can reverse is worth a sentence in the answer: the share below
# which the report's first paragraph says so (0.1 %, the scale of Huang et al.'s Arena finding).
FRAGILE_SHARE = 0.001
# Challengers tried for the top rank: the next few by rating (a system far below cannot be made
# first by fewer votes than one close behind).
TOP_CHALLENGERS = 5


def ranking_options(config: dict[str, Any] | None) -> dict[str, Any]:
    """The study's ``ranking:`` block with defaults filled in (an imported study may have none)."""
    given = dict((config or {}).get("ranking") or {})
    return {**DEFAULTS, **{k: v for k, v in given.items() if v is not None}}


def tiers(ratings: list[float], low: list[float], high: list[float]) -> list[int]:
    """Tier of each system (1 = best), in the order given (which must be best first).

    >>> tiers([1100, 1090, 1000, 995], [1080, 1070, 980, 975], [1120, 1110, 1020, 1015])
    [1, 1, 2, 2]
    """
    out: list[int] = []
    head_low = None
    tier = 0
    for _rating, lo, hi in zip(ratings, low, high):
        if head_low is None or hi < head_low:
            tier += 1
            head_low = lo
        out.append(tier)
    return out


def provisional(n: list[float], low: list[float], high: list[float], options: dict[str, Any]) -> list[bool]:
    return [
        bool(k < options["provisional_votes"] or (h - lo) > options["provisional_width"])
        for k, lo, h in zip(n, low, high)
    ]


def tie_section(names: list[str], wins: np.ndarray, ties: np.ndarray, used: str) -> dict[str, Any] | None:
    """Both tie models fitted, their parameters and fit, and predicted vs observed tie rates per pair;
    None when there are no ties."""
    if ties.sum() == 0:
        return None
    fits = {m: fit_tie_model(wins, ties, m) for m in ("davidson", "rao-kupper")}
    battles = wins + wins.T + ties
    K = len(names)
    pairs = []
    predicted = {m: predicted_tie_rates(f) for m, f in fits.items()}
    for a in range(K):
        for b in range(a + 1, K):
            n = battles[a, b]
            if n <= 0:
                continue
            pairs.append(
                {
                    "a": names[a],
                    "b": names[b],
                    "n": int(n),
                    "observed": round(float(ties[a, b] / n), 4),
                    **{m.replace("-", "_"): round(float(p[a, b]), 4) for m, p in predicted.items() if p is not None},
                }
            )
    total = float(np.triu(battles, 1).sum())
    models = {}
    for m, f in fits.items():
        p = predicted[m]
        assert p is not None
        weights = np.triu(battles, 1)
        mae = float(np.sum(weights * np.abs(p - np.where(battles > 0, ties / np.maximum(battles, 1), 0))) / total)
        models[m] = {
            "tie_parameter": round(float(f.tie_parameter or 0.0), 4),
            "log_likelihood": round(f.log_likelihood, 2),
            "predicted_tie_rate": round(float(np.sum(weights * p) / total), 4),
            "tie_rate_abs_error": round(mae, 4),
        }
    return {
        "used": used,
        "observed_tie_rate": round(float(np.triu(ties, 1).sum() / total), 4),
        "models": models,
        "pairs": pairs,
        "note": (
            "davidson: nu, the tie weight against sqrt(pi_i pi_j) (Davidson 1970); rao-kupper: theta >= 1, "
            "the threshold of discrimination (Rao & Kupper 1967); tie_rate_abs_error: vote-weighted mean "
            "absolute difference between predicted and observed tie rates per pair"
        ),
    }


def tie_model_board(
    names: list[str], wins: np.ndarray, ties: np.ndarray, model: str, ci: float, n_draws: int, seed: int | None
) -> dict[str, np.ndarray]:
    """Ratings (Elo scale, mean 1000), Wald-based intervals and rank intervals of a tie model fit."""
    fit = fit_tie_model(wins, ties, model)
    draws = to_elo(simulate_ratings(fit, n=max(n_draws, 200), seed=seed))
    alpha = (1 - ci) / 2
    lo, hi = np.quantile(draws, [alpha, 1 - alpha], axis=0)
    order = np.argsort(-draws, axis=1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, len(names) + 1)[None, :].repeat(len(draws), 0), axis=1)
    return {
        "rating": to_elo(fit.theta),
        "ci_low": lo,
        "ci_high": hi,
        "rank": ci_rank(lo, hi),
        "rank_lo": np.floor(np.quantile(ranks, alpha, axis=0)).astype(int),
        "rank_hi": np.ceil(np.quantile(ranks, 1 - alpha, axis=0)).astype(int),
        "tie_parameter": np.array([fit.tie_parameter if fit.tie_parameter is not None else np.nan]),
    }


def robustness_audit(
    names: list[str],
    wins: np.ndarray,
    ties: np.ndarray,
    theta: np.ndarray,
    *,
    top_k: int = TOP_CHALLENGERS,
    board: list[str] | None = None,
) -> dict[str, Any]:
    """Votes to drop to reverse the top rank and each adjacent pair of the board (ties half).

    `board`: the names in the order the report's leaderboard shows them, when that board comes from
    another fit than `theta` (two fits may order two nearly equal systems differently: the audit
    must audit the board the reader sees); by default the order of `theta`.
    """
    order = [int(k) for k in np.argsort(-theta, kind="stable")]
    if board is not None:
        index = {n: k for k, n in enumerate(names)}
        shown = [index[n] for n in board if n in index]
        order = shown + [k for k in order if k not in shown]
    adjacent = []
    for upper, lower in zip(order, order[1:]):
        flip = votes_to_reverse(wins, ties, upper, lower, theta=theta)
        adjacent.append(
            {
                "above": names[upper],
                "below": names[lower],
                "dropped": flip.dropped,
                "share": None if flip.share is None else round(flip.share, 6),
                "dropped_votes": [
                    {"a": names[a], "b": names[b], "outcome": kind, "votes": k} for a, b, kind, k in flip.by_cell
                ],
            }
        )
    top = None
    if len(order) > 1:
        best: tuple[int, int, float] | None = None  # (challenger, votes dropped, share)
        for challenger in order[1 : 1 + top_k]:
            flip = votes_to_reverse(wins, ties, order[0], challenger, theta=theta)
            if flip.dropped is not None and (best is None or flip.dropped < best[1]):
                best = (challenger, flip.dropped, flip.share or 0.0)
        if best is not None:
            top = {
                "first": names[order[0]],
                "overtaken_by": names[best[0]],
                "dropped": best[1],
                "share": round(best[2], 6),
            }
        else:
            top = {"first": names[order[0]], "overtaken_by": None, "dropped": None, "share": None}
    votes = int(round(wins.sum() + np.triu(ties, 1).sum()))
    return {
        "votes": votes,
        "top": top,
        "adjacent": adjacent,
        "fragile_share": FRAGILE_SHARE,
        "method": (
            "greedy influence-guided dropping with refits (Huang, Shen, Wei & Broderick, ICLR 2026; "
            "Broderick, Giordano & Meager 2020): each count is verified by refitting Bradley-Terry "
            "(ties half) without exactly those votes; it is an upper bound on the fewest that would do"
        ),
    }


# -- substance or style (stats/style.py) ---------------------------------------------------------------

# below this many votes with both answers' text the style fit is not reported (too few to separate
# style from strength)
MIN_STYLE_VOTES = 50


def style_section(
    names: list[str],
    a: np.ndarray,
    b: np.ndarray,
    score: np.ndarray,
    features_a: np.ndarray,
    features_b: np.ndarray,
    raw_board: list[dict[str, Any]],
    ci: float = 0.95,
) -> dict[str, Any] | None:
    """Style-controlled Bradley–Terry beside the raw board: coefficients with robust intervals, each
    system's controlled rating, rank and rank change. `raw_board`: rows {name, rank?} best first."""
    from scipy.special import ndtri  # = scipy.stats.norm.ppf, bit for bit, without importing scipy.stats

    from dialeval.stats.style import STYLE_FEATURES, fit_style_bt, style_covariates

    if len(score) < MIN_STYLE_VOTES:
        return None
    z, _, sd = style_covariates(features_a, features_b)
    fit = fit_style_bt(a, b, score, z, len(names))
    q = ndtri(0.5 + ci / 2)
    rating = to_elo(fit.theta)
    low, high = to_elo(fit.theta - q * fit.theta_se), to_elo(fit.theta + q * fit.theta_se)
    ranks = ci_rank(list(low), list(high))
    raw_position = {row["name"]: k + 1 for k, row in enumerate(raw_board)}
    order = np.argsort(-rating, kind="stable")
    board = []
    for position, k in enumerate(order, start=1):
        name = names[int(k)]
        board.append(
            {
                "name": name,
                "rating": round(float(rating[k]), 2),
                "ci_low": round(float(low[k]), 2),
                "ci_high": round(float(high[k]), 2),
                "rank": int(ranks[k]),
                "position": position,
                "raw_position": raw_position.get(name),
                "position_change": None if name not in raw_position else raw_position[name] - position,
            }
        )
    coefficients = [
        {
            "feature": feature,
            "coefficient": round(float(beta), 4),
            "ci_low": round(float(beta - q * se), 4),
            "ci_high": round(float(beta + q * se), 4),
            "varies": bool(spread > 0),
        }
        for feature, beta, se, spread in zip(STYLE_FEATURES, fit.beta, fit.beta_se, sd)
    ]
    return {
        "votes": int(len(score)),
        "length_unit": "words (whitespace-separated)",
        "coefficients": coefficients,
        "leaderboard": board,
        "note": (
            "Bradley-Terry with style covariates (Chatbot Arena's style control, LMArena 2024): each "
            "covariate is the normalised difference (a - b)/(a + b) of the two answers, standardised; a "
            "coefficient is the log-odds a one-SD style difference buys. Ratings are strengths at equal "
            "style; intervals are robust (sandwich) normal intervals; position_change = raw position - "
            "controlled position (positive: the system rises once style is controlled)."
        ),
    }


def segment_boards(
    votes: Any, column: str, overall: dict[str, float], *, n_boot: int, ci: float, seed: int | None, min_votes: int = 30
) -> dict[str, Any]:
    """A Bradley–Terry board per value of `column` (a prompt category, an annotator attribute), each
    with its n and intervals, and `differs`: the pairs whose order in the segment is significantly
    the other way round from the overall board (the system rated lower overall has, in the segment,
    an interval wholly above the other's). The segments' intervals are simultaneous: each at level
    1 - (1 - ci) / segments (Bonferroni), so that many small segments do not flag by chance."""
    from dialeval.stats.bradley_terry import bradley_terry

    out: dict[str, Any] = {}
    segments = int((votes.groupby(column).size() >= min_votes).sum())
    ci = 1.0 - (1.0 - ci) / max(segments, 1)
    for value, part in votes.groupby(column, sort=True):
        if len(part) < min_votes:
            out[str(value)] = {"n": int(len(part)), "leaderboard": [], "note": f"fewer than {min_votes} votes"}
            continue
        board = bradley_terry(part, "model_a", "model_b", "winner", n_boot=n_boot, ci=ci, seed=seed)
        rows = [
            {
                "name": row.name,
                "rating": round(float(row.rating), 2),
                "ci_low": round(float(row.ci_low), 2),
                "ci_high": round(float(row.ci_high), 2),
                "n": int(row.n),
            }
            for row in board.itertuples(index=False)
        ]
        differs = [
            [low["name"], high["name"]]  # [now above, above overall]
            for high in rows
            for low in rows
            if high["name"] in overall
            and low["name"] in overall
            and overall[high["name"]] > overall[low["name"]]
            and low["ci_low"] > high["ci_high"]
        ]
        out[str(value)] = {"n": int(len(part)), "leaderboard": rows, "differs": differs}
    return out


def style_of_votes(
    board: list[dict[str, Any]],
    model_a: Any,
    model_b: Any,
    winner: Any,
    features_a: np.ndarray,
    features_b: np.ndarray,
    ci: float = 0.95,
) -> dict[str, Any] | None:
    """Style control on votes in the arena's shape (model_a, model_b, winner = model_a | model_b | a
    kind of tie, half) with each answer's style features (stats.style.style_features); votes of a
    system not on the board, or of a system against itself, are left out."""
    names = [str(r["name"]) for r in board]
    index = {n: k for k, n in enumerate(names)}
    a, b, w = np.asarray(model_a, dtype=object), np.asarray(model_b, dtype=object), np.asarray(winner, dtype=object)
    keep = np.array([x in index and y in index and x != y for x, y in zip(a, b)], dtype=bool)
    if not keep.any():
        return None
    score = np.where(w[keep] == "model_a", 1.0, np.where(w[keep] == "model_b", 0.0, 0.5))
    return style_section(
        names,
        np.array([index[x] for x in a[keep]]),
        np.array([index[y] for y in b[keep]]),
        score,
        np.asarray(features_a)[keep],
        np.asarray(features_b)[keep],
        board,
        ci=ci,
    )


def style_of_choices(
    rows: list[tuple[str, str, str, str, bool]], board: list[dict[str, Any]], ci: float = 0.95
) -> dict[str, Any] | None:
    """Style control for a pairwise method whose votes are choices between two texts (ACUTE's two
    conversations, PW-Turn's two replies): rows of (first shown bot, other bot, first text, other
    text, first chosen). Side a is the one shown first, so the orientation is the page's, not the
    winner's (centring the covariates would otherwise remove the very effect measured)."""
    from dialeval.stats.style import style_features

    names = [str(r["name"]) for r in board]
    index = {n: k for k, n in enumerate(names)}
    rows = [r for r in rows if r[0] in index and r[1] in index and r[0] != r[1]]
    if not rows:
        return None
    return style_section(
        names,
        np.array([index[r[0]] for r in rows]),
        np.array([index[r[1]] for r in rows]),
        np.array([1.0 if r[4] else 0.0 for r in rows]),
        np.array([style_features(r[2]) for r in rows]),
        np.array([style_features(r[3]) for r in rows]),
        board,
        ci=ci,
    )
