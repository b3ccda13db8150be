"""Single-model statistics: SM-Turn and SM-Dialog (Smith et al. 2022, §3.1.4, §4.3, §4.4.1, Appendix G).

Two tidy inputs; this module imports nothing from dialeval:
- turns:  one row per rated bot turn, `df[conversation, bot, turn, <quality>...]` with 0/1 marks;
- dialog: one row per conversation, `df[conversation, bot, <quality>...]` with Likert 1..5.
`qualities` defaults to ("engaging", "humanlike", "interesting").
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats as sps

# the two names this module uses, from their own modules: `import statsmodels.api` imports all of
# statsmodels (~0.6 s of every `dialeval report` of a single-model study)
from statsmodels.regression.linear_model import OLS
from statsmodels.tools.tools import add_constant

__all__ = [
    "QUALITIES",
    "combine_scores",
    "conversation_turn_scores",
    "effective_win_rate",
    "likert_summary",
    "likert_to_unit",
    "ols_turn_coefficients",
    "pairwise_ttests",
    "ttest",
    "turn_success_rates",
    "turn_wta",
]

QUALITIES = ("engaging", "humanlike", "interesting")


def _stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def likert_to_unit(x, low: float = 1.0, high: float = 5.0):
    """Shift and scale a Likert score from [low, high] to [0, 1] (Smith et al. 2022, Appendix G)."""
    return (np.asarray(x, dtype=float) - low) / (high - low)


def _range(df: pd.DataFrame, turn_range: tuple[int, int] | None, turn: str = "turn") -> pd.DataFrame:
    if turn_range is None:
        return df
    return df[(df[turn] >= turn_range[0]) & (df[turn] <= turn_range[1])]


def conversation_turn_scores(
    turns: pd.DataFrame,
    turn_range: tuple[int, int] | None = None,
    mode: str = "rate",
    qualities: Sequence[str] = QUALITIES,
) -> pd.DataFrame:
    """Per conversation and quality: the share of marked turns in range (`mode="rate"`) or the
    winner-takes-all success, 1 when at least half of the responses are marked (`mode="wta"`).
    Returns DataFrame[conversation, bot, n_turns, <quality>...]."""
    d = _range(turns, turn_range)
    q = list(qualities)
    g = d.groupby(["conversation", "bot"])
    out = g[q].mean()
    if mode == "wta":
        out = (out >= 0.5).astype(float)
    elif mode != "rate":
        raise ValueError(f"mode must be 'rate' or 'wta', not {mode!r}")
    out.insert(0, "n_turns", g.size())
    return out.reset_index()


def turn_success_rates(
    turns: pd.DataFrame, turn_range: tuple[int, int] | None = None, qualities: Sequence[str] = QUALITIES
) -> pd.DataFrame:
    """SM-Turn success rate per bot: share of rated turns (in range) marked with each quality.
    DataFrame[bot, quality, n, successes, rate]."""
    d = _range(turns, turn_range)
    rows = []
    for bot, g in d.groupby("bot", sort=True):
        for q in qualities:
            v = g[q].astype(float)
            rows.append(
                {"bot": bot, "quality": q, "n": int(v.size), "successes": float(v.sum()), "rate": float(v.mean())}
            )
    return pd.DataFrame(rows, columns=["bot", "quality", "n", "successes", "rate"])


def turn_wta(
    turns: pd.DataFrame, turn_range: tuple[int, int] | None = (3, 6), qualities: Sequence[str] = QUALITIES
) -> pd.DataFrame:
    """Share of conversations where at least half the responses (in range) are marked.
    DataFrame[bot, quality, conversations, wta]."""
    per = conversation_turn_scores(turns, turn_range, "wta", qualities)
    rows = []
    for bot, g in per.groupby("bot", sort=True):
        for q in qualities:
            rows.append({"bot": bot, "quality": q, "conversations": len(g), "wta": float(g[q].mean())})
    return pd.DataFrame(rows, columns=["bot", "quality", "conversations", "wta"])


def likert_summary(dialog: pd.DataFrame, qualities: Sequence[str] = QUALITIES) -> pd.DataFrame:
    """SM-Dialog mean and SD (ddof=1) per bot and quality: DataFrame[bot, quality, n, mean, sd]."""
    rows = []
    for bot, g in dialog.groupby("bot", sort=True):
        for q in qualities:
            v = g[q].dropna().astype(float)
            rows.append(
                {
                    "bot": bot,
                    "quality": q,
                    "n": int(v.size),
                    "mean": float(v.mean()),
                    "sd": float(v.std(ddof=1)) if v.size > 1 else float("nan"),
                }
            )
    return pd.DataFrame(rows, columns=["bot", "quality", "n", "mean", "sd"])


def ttest(x: Sequence[float], y: Sequence[float]) -> dict:
    """Two-sided independent two-sample t-test (pooled variance, as in Smith et al. 2022, Appendix F)."""
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        t, p = float("nan"), 1.0
    else:
        res = sps.ttest_ind(a, b, equal_var=True)
        t, p = float(res.statistic), float(res.pvalue)
        if not np.isfinite(p):  # both samples constant
            p = 1.0 if a.mean() == b.mean() else 0.0
    return {
        "n_a": int(a.size),
        "n_b": int(b.size),
        "mean_a": float(a.mean()) if a.size else None,
        "mean_b": float(b.mean()) if b.size else None,
        "t": t,
        "p": p,
        "stars": _stars(p),
    }


def pairwise_ttests(
    frame: pd.DataFrame, metrics: Sequence[str], bot: str = "bot", order: Sequence[str] | None = None
) -> pd.DataFrame:
    """t-test for every bot pair and metric column: DataFrame[a, b, metric, n_a, n_b, mean_a, mean_b, t, p, stars].
    Pairs follow `order` (default alphabetical): a is listed before b."""
    present = set(frame[bot].unique())
    bots = [b for b in order if b in present] if order is not None else sorted(present)
    rows = []
    for a, b in combinations(bots, 2):
        for m in metrics:
            rows.append(
                {"a": a, "b": b, "metric": m, **ttest(frame.loc[frame[bot] == a, m], frame.loc[frame[bot] == b, m])}
            )
    return pd.DataFrame(rows)


def _prob_greater(a: np.ndarray, b: np.ndarray) -> float:
    """P(X > Y) + 1/2 P(X = Y) over all pairs of a's and b's values."""
    sb = np.sort(b)
    less = np.searchsorted(sb, a, side="left").sum()
    leq = np.searchsorted(sb, a, side="right").sum()
    return float((less + 0.5 * (leq - less)) / (a.size * b.size))


def _prob_greater_rows(a_rows: np.ndarray, b_rows: np.ndarray, chunk: int = 256) -> np.ndarray:
    """`_prob_greater` of each pair of rows, at once (the bootstrap's 2,000 rounds took ~50 ms per
    pair and quality in a loop, 1-2 s of a single-model report). The same integer counts and the
    same arithmetic on them, so the same floats: values become ranks among all values, and each
    row's ranks are shifted past the previous row's, so one searchsorted counts row by row."""
    values = np.unique(np.concatenate([a_rows.ravel(), b_rows.ravel()]))
    na, nb = a_rows.shape[1], b_rows.shape[1]
    out = []
    for start in range(0, len(a_rows), chunk):  # bounded memory for large studies
        ra = np.searchsorted(values, a_rows[start : start + chunk])
        rb = np.sort(np.searchsorted(values, b_rows[start : start + chunk]), axis=1)
        shift = np.arange(len(ra))[:, None] * (values.size + 1)
        keys = (rb + shift).ravel()
        before = np.arange(len(ra))[:, None] * nb  # b's of earlier rows, counted by every search
        less = (np.searchsorted(keys, ra + shift, side="left") - before).sum(axis=1)
        leq = (np.searchsorted(keys, ra + shift, side="right") - before).sum(axis=1)
        out.append((less + 0.5 * (leq - less)) / (na * nb))
    return np.concatenate(out)


def effective_win_rate(
    x: Sequence[float],
    y: Sequence[float],
    n_boot: int = 10000,
    sample_size: int = 1,
    seed: int | None = 0,
) -> dict:
    """Effective win rate of bot A (scores x) over bot B (scores y), Smith et al. 2022, §4.4.1.

    Each bootstrap round draws `sample_size` ratings with replacement from each bot and A wins the
    round when the mean of its draw is higher (a tie counts half). With the default sample_size=1
    this is how often one of A's per-conversation scores beats one of B's, which is what makes it
    comparable to a pairwise win rate; `exact` gives that quantity without resampling
    (P(X > Y) + ½ P(X = Y) over all pairs). Larger sample sizes measure how often a study of that
    size would rank A first. `ci_low`, `ci_high`: a 95% percentile bootstrap interval of `exact` over
    resampled conversations (at most 2,000 rounds): the uncertainty of the data, not the Monte Carlo
    error of `win_rate` (which shrinks with n_boot whatever the sample size).
    Returns {win_rate, exact, ci_low, ci_high, n_boot, sample_size}.
    """
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return {
            "win_rate": None,
            "exact": None,
            "ci_low": None,
            "ci_high": None,
            "n_boot": n_boot,
            "sample_size": sample_size,
        }
    exact = _prob_greater(a, b)
    rng = np.random.default_rng(seed)
    ma = a[rng.integers(0, a.size, (n_boot, sample_size))].mean(axis=1)
    mb = b[rng.integers(0, b.size, (n_boot, sample_size))].mean(axis=1)
    wins = np.where(ma > mb, 1.0, np.where(ma == mb, 0.5, 0.0))
    rate = float(wins.mean())
    rounds = max(1, min(n_boot, 2000))
    # the draws in the order the one-round-at-a-time loop made them (a's, then b's, per round)
    draws = [(rng.integers(0, a.size, a.size), rng.integers(0, b.size, b.size)) for _ in range(rounds)]
    resampled = _prob_greater_rows(np.array([a[i] for i, _ in draws]), np.array([b[j] for _, j in draws]))
    low, high = np.percentile(resampled, [2.5, 97.5])
    return {
        "win_rate": rate,
        "exact": float(exact),
        "ci_low": float(low),
        "ci_high": float(high),
        "n_boot": n_boot,
        "sample_size": sample_size,
    }


def ols_turn_coefficients(
    turns: pd.DataFrame,
    dialog: pd.DataFrame,
    quality: str | None = None,
    turn_range: tuple[int, int] | None = None,
    qualities: Sequence[str] = QUALITIES,
) -> dict:
    """OLS of the end-of-conversation Likert score on the per-turn SM-Turn ratings (Smith et al. 2022, Figure 6).

    y = Likert, X = one column per turn index (the rating of that turn) plus a constant. With
    `quality=None` both sides are averaged over the qualities first, as in the paper. Conversations
    missing a turn in range are dropped. Returns {n, r2, intercept, coefficients:
    DataFrame[turn, coef, se, p]}; larger coefficients on later turns suggest a recency bias.
    """
    q = list(qualities) if quality is None else [quality]
    d = _range(turns, turn_range).copy()
    d["_x"] = d[q].astype(float).mean(axis=1)
    X = d.pivot_table(index="conversation", columns="turn", values="_x", aggfunc="mean").dropna()
    y = dialog.groupby("conversation")[q].mean().mean(axis=1)
    common = X.index.intersection(y.index)
    X, y = X.loc[common].sort_index(axis=1), y.loc[common]
    cols = [int(c) for c in X.columns]
    if len(common) <= len(cols) + 1:
        return {
            "n": len(common),
            "r2": None,
            "intercept": None,
            "coefficients": pd.DataFrame(columns=["turn", "coef", "se", "p"]),
        }
    Xc = add_constant(X.to_numpy(dtype=float), has_constant="add")
    res = OLS(y.to_numpy(dtype=float), Xc).fit()
    coef = pd.DataFrame({"turn": cols, "coef": res.params[1:], "se": res.bse[1:], "p": res.pvalues[1:]})
    return {"n": len(common), "r2": float(res.rsquared), "intercept": float(res.params[0]), "coefficients": coef}


def combine_scores(
    turns: pd.DataFrame,
    dialog: pd.DataFrame,
    weight_turn: float = 1.0,
    weight_dialog: float = 5.0,
    turn_range: tuple[int, int] | None = (3, 6),
    turn_mode: str = "wta",
    qualities: Sequence[str] = QUALITIES,
    likert_range: tuple[float, float] = (1.0, 5.0),
) -> pd.DataFrame:
    """000 Appendix G: per conversation, the weighted mean of the SM-Turn score (WTA success over
    `turn_range` by default, in {0, 1}) and the SM-Dialog Likert score rescaled to [0, 1]:

        combined = (w_t * turn + w_d * (likert - 1) / 4) / (w_t + w_d)

    Returns DataFrame[conversation, bot, <quality>..., mean] (mean over qualities). Only
    conversations that have both kinds of rating are kept.
    """
    if weight_turn < 0 or weight_dialog < 0 or weight_turn + weight_dialog == 0:
        raise ValueError("weights must be non-negative and not both zero")
    q = list(qualities)
    t = conversation_turn_scores(turns, turn_range, turn_mode, q).set_index(["conversation", "bot"])[q]
    lk = dialog.groupby(["conversation", "bot"])[q].mean()
    lk = (lk - likert_range[0]) / (likert_range[1] - likert_range[0])
    common = t.index.intersection(lk.index)
    comb = (weight_turn * t.loc[common] + weight_dialog * lk.loc[common]) / (weight_turn + weight_dialog)
    comb["mean"] = comb[q].mean(axis=1)
    return comb.reset_index()
