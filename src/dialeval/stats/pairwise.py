"""Pairwise statistics: ACUTE-Eval (PW-Dialog; Li et al. 2019) and PW-Turn (Smith et al. 2022, §3.1.2, Appendices C/E).

Inputs are plain DataFrames; this module imports nothing from dialeval.

- `binomial_p`, `stars`: two-sided binomial test against 50% (stats/binomial.py: scipy.stats.binomtest's value).
- `pair_table`: wins, win rate and p per unordered bot pair from `df[winner, loser]`.
- `win_rate_grid`: the all-bots grid of Li et al. 2019, Tables 2, 4–8 with significance.
- `agreement`, `question_agreement`: inter-annotator agreement (Li et al. 2019, Table 1).
- `aa_test`: the A/A sanity check (same bot on both sides ⇒ ≈50% for the first side).
- `pw_turn_scores`: Lin, Sqr and WTA (x^1, x^2, x^∞ combination per conversation) for a bot pair.
- `per_turn_win_rates`: the win rate per bot-turn index (Smith et al. 2022, Table 5 / Figure 3).
- `chunk_variability`: std of a win rate across chunks of equal annotator time (Smith et al. 2022, Appendix E).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from .binomial import two_sided_p

__all__ = [
    "WinRateGrid",
    "aa_test",
    "agreement",
    "binomial_p",
    "chunk_labels",
    "chunk_variability",
    "pair_table",
    "per_turn_win_rates",
    "pw_turn_scores",
    "question_agreement",
    "stars",
    "win_rate_grid",
]


def stars(p: float | None) -> str:
    """'***' for p<.001, '**' for p<.01, '*' for p<.05, '' otherwise (or when p is missing)."""
    if p is None or not np.isfinite(p):
        return ""
    if p < 0.001:
        return "***"
    if p < 0.01:
        return "**"
    if p < 0.05:
        return "*"
    return ""


def binomial_p(successes: float, failures: float, p0: float = 0.5) -> float:
    """Two-sided exact binomial test of successes out of successes+failures against p0.

    Counts are rounded to integers (half-wins from ties would otherwise break the exact test).
    With no trials there is no evidence, so p = 1.0.
    """
    return _binomial_p(round(successes), round(failures), float(p0))


@lru_cache(maxsize=65536)
def _binomial_p(k: int, failures: int, p0: float) -> float:
    """Cached: a grid of many bots asks for the same counts again (each cell and its pair row)."""
    n = k + failures
    if n == 0:
        return 1.0
    return two_sided_p(k, n, p0)


def _rate(x: float, y: float) -> float:
    return x / (x + y) if (x + y) > 0 else float("nan")


def pair_table(
    df: pd.DataFrame,
    winner: str = "winner",
    loser: str = "loser",
    order: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per unordered bot pair: a, b, wins_a, wins_b, n, win_rate_a, p, stars.

    `a` is the bot listed first in `order` (default: alphabetical). Rows where a bot meets itself
    (A/A) are left out; see `aa_test`.
    """
    d = df[df[winner] != df[loser]]
    bots = list(order) if order is not None else sorted(set(d[winner]) | set(d[loser]))
    pos = {b: i for i, b in enumerate(bots)}
    counts = d.groupby([winner, loser]).size()
    pairs: dict[tuple[str, str], list[int]] = {}
    for (w, l_), c in counts.items():
        a, b = (w, l_) if pos.get(w, math.inf) <= pos.get(l_, math.inf) else (l_, w)
        rec = pairs.setdefault((a, b), [0, 0])
        rec[0 if w == a else 1] += int(c)
    rows = []
    for (a, b), (wa, wb) in pairs.items():
        p = binomial_p(wa, wb)
        rows.append(
            {
                "a": a,
                "b": b,
                "wins_a": wa,
                "wins_b": wb,
                "n": wa + wb,
                "win_rate_a": _rate(wa, wb),
                "p": p,
                "stars": stars(p),
            }
        )
    out = pd.DataFrame(rows, columns=["a", "b", "wins_a", "wins_b", "n", "win_rate_a", "p", "stars"])
    if len(out):
        out["_ia"] = out["a"].map(lambda x: pos.get(x, len(pos)))
        out["_ib"] = out["b"].map(lambda x: pos.get(x, len(pos)))
        out = out.sort_values(["_ia", "_ib"]).drop(columns=["_ia", "_ib"]).reset_index(drop=True)
    return out


@dataclass
class WinRateGrid:
    """rates.loc[row, col] = share of row-vs-col matches won by `row`; p and n alike (NaN on the diagonal/unplayed)."""

    rates: pd.DataFrame
    p: pd.DataFrame
    n: pd.DataFrame

    def significant(self, alpha: float = 0.05) -> pd.DataFrame:
        return self.p < alpha

    def formatted(self) -> pd.DataFrame:
        """Percentages with stars, as in the tables of Li et al. (2019) ('66*'); empty where no match was played."""
        out = self.rates.copy().astype(object)
        for r in self.rates.index:
            for c in self.rates.columns:
                v = self.rates.loc[r, c]
                out.loc[r, c] = "" if not np.isfinite(v) else f"{100 * v:.0f}{stars(self.p.loc[r, c])}"
        return out

    def to_dict(self) -> dict:
        def clean(frame: pd.DataFrame) -> list[list[float | None]]:
            return [[None if not np.isfinite(v) else float(v) for v in row] for row in frame.to_numpy(dtype=float)]

        return {"bots": list(self.rates.index), "rates": clean(self.rates), "p": clean(self.p), "n": clean(self.n)}


def win_rate_grid(
    df: pd.DataFrame, winner: str = "winner", loser: str = "loser", bots: Sequence[str] | None = None
) -> WinRateGrid:
    """The win-rate grid of all bots with binomial p-values per cell."""
    d = df[df[winner] != df[loser]]
    names = list(bots) if bots is not None else sorted(set(d[winner]) | set(d[loser]))
    w = d.groupby([winner, loser]).size().unstack(fill_value=0).reindex(index=names, columns=names, fill_value=0)
    wins = w.to_numpy(dtype=float)
    n = wins + wins.T
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(n > 0, wins / np.where(n > 0, n, 1), np.nan)
    p = np.full_like(rates, np.nan)
    for i in range(len(names)):
        for j in range(len(names)):
            if i != j and n[i, j] > 0:
                p[i, j] = binomial_p(wins[i, j], wins[j, i])
    mk = lambda x: pd.DataFrame(x, index=names, columns=names)
    return WinRateGrid(rates=mk(rates), p=mk(p), n=mk(n))


def agreement(df: pd.DataFrame, item: str | Sequence[str] = "item", choice: str = "choice") -> dict:
    """Agreement among annotators on items that got at least two annotations.

    - `majority`: share of annotations that picked their item's most chosen option (Li et al. 2019, Table 1's
      "agreement rate for the most chosen response"), pooled over items;
    - `pairwise`: share of annotator pairs on the same item that made the same choice;
    - `p`: two-sided binomial test of the pooled majority count against 50% (meaningful for binary
      choices).
    """
    keys = [item] if isinstance(item, str) else list(item)
    counts = df.groupby(keys + [choice]).size()
    per_item = counts.groupby(level=list(range(len(keys))))
    n_item = per_item.sum()
    multi = n_item[n_item >= 2].index
    if len(multi) == 0:
        return {"items": 0, "annotations": 0, "majority": None, "pairwise": None, "p": None, "stars": ""}
    top = per_item.max()[multi]
    tot = n_item[multi]
    # pairs of annotations of one item that agree, summed per item (one grouped sum, no apply per item)
    same_pairs = (counts * (counts - 1) / 2).groupby(level=list(range(len(keys)))).sum().astype(float)[multi]
    all_pairs = tot * (tot - 1) / 2
    k, n = int(top.sum()), int(tot.sum())
    p = binomial_p(k, n - k)
    return {
        "items": len(multi),
        "annotations": n,
        "majority": k / n,
        "pairwise": float(same_pairs.sum() / all_pairs.sum()),
        "p": p,
        "stars": stars(p),
    }


def question_agreement(
    df: pd.DataFrame, question: str = "question", item: str | Sequence[str] = "item", choice: str = "choice"
) -> pd.DataFrame:
    """003 Table 1: agreement per question phrasing on fixed pair(s). One row per question."""
    rows = []
    for q, g in df.groupby(question, sort=True):
        a = agreement(g, item=item, choice=choice)
        rows.append({"question": q, **a})
    out = pd.DataFrame(rows)
    if len(out):
        out = out.sort_values("majority", ascending=False, na_position="last").reset_index(drop=True)
    return out


def aa_test(first_side_won: Iterable[bool], alpha: float = 0.05) -> dict:
    """A/A check: with the same bot on both sides the first-shown side should win about half the time."""
    x = np.asarray(list(first_side_won), dtype=bool)
    k, n = int(x.sum()), int(x.size)
    p = binomial_p(k, n - k)
    return {
        "n": n,
        "first_side_wins": k,
        "rate": (k / n) if n else None,
        "p": p,
        "stars": stars(p),
        "passed": bool(p >= alpha),
    }


def _in_range(turns: pd.Series, turn_range: tuple[int, int] | None) -> pd.Series:
    if turn_range is None:
        return pd.Series(True, index=turns.index)
    return (turns >= turn_range[0]) & (turns <= turn_range[1])


def pw_turn_scores(
    df: pd.DataFrame,
    a: str,
    b: str,
    turn_range: tuple[int, int] | None = None,
    conversation: str = "conversation",
    turn: str = "turn",
    chosen: str = "chosen",
) -> dict:
    """PW-Turn win rates of `a` over `b` from one row per rated turn (`df[conversation, turn, chosen]`).

    With x, y the turns won by a and b in one conversation:
    - lin = Σx / (Σx + Σy) over all rated turns (the binomial test uses these counts);
    - sqr = mean over conversations of x² / (x² + y²);
    - wta = mean over conversations of [x > y] (+½ when x = y, the limit of x^k/(x^k+y^k)).
    Conversations without a rated turn in range are skipped. Rows not choosing a or b are ignored.
    """
    d = df[df[chosen].isin([a, b]) & _in_range(df[turn], turn_range)]
    per = (
        d.assign(_a=(d[chosen] == a).astype(int), _b=(d[chosen] == b).astype(int))
        .groupby(conversation)[["_a", "_b"]]
        .sum()
    )
    x = per["_a"].to_numpy(dtype=float)
    y = per["_b"].to_numpy(dtype=float)
    wins_a, wins_b = int(x.sum()), int(y.sum())
    p = binomial_p(wins_a, wins_b)
    nconv = len(per)
    return {
        "a": a,
        "b": b,
        "turns": turn_range,
        "wins_a": wins_a,
        "wins_b": wins_b,
        "n": wins_a + wins_b,
        "conversations": nconv,
        "lin": _rate(wins_a, wins_b),
        "sqr": float(np.mean(x**2 / (x**2 + y**2))) if nconv else float("nan"),
        "wta": float(np.mean(np.where(x > y, 1.0, np.where(x == y, 0.5, 0.0)))) if nconv else float("nan"),
        "wta_conversations_a": int((x > y).sum()),
        "wta_conversations_b": int((y > x).sum()),
        "wta_ties": int((x == y).sum()),
        "p": p,
        "stars": stars(p),
    }


def per_turn_win_rates(df: pd.DataFrame, a: str, b: str, turn: str = "turn", chosen: str = "chosen") -> pd.DataFrame:
    """Win rate of `a` per turn index: DataFrame[turn, wins_a, wins_b, n, win_rate_a, p, stars]."""
    d = df[df[chosen].isin([a, b])]
    rows = []
    for t, g in d.groupby(turn, sort=True):
        wa = int((g[chosen] == a).sum())
        wb = int((g[chosen] == b).sum())
        p = binomial_p(wa, wb)
        rows.append(
            {
                "turn": int(t),
                "wins_a": wa,
                "wins_b": wb,
                "n": wa + wb,
                "win_rate_a": _rate(wa, wb),
                "p": p,
                "stars": stars(p),
            }
        )
    return pd.DataFrame(rows, columns=["turn", "wins_a", "wins_b", "n", "win_rate_a", "p", "stars"])


def chunk_labels(seconds: Sequence[float], chunk_minutes: float = 45.0) -> np.ndarray:
    """Chunk index of each time-ordered rating: a rating belongs to the chunk in which its annotator
    time (cumulative elapsed seconds, this rating included) ends."""
    s = np.nan_to_num(np.asarray(seconds, dtype=float), nan=0.0)
    cum = np.cumsum(s)
    width = chunk_minutes * 60.0
    # a rating ending exactly on a boundary closes that chunk
    return np.maximum(np.ceil(cum / width).astype(int) - 1, 0)


def chunk_variability(
    frame: pd.DataFrame,
    seconds: str = "elapsed_s",
    score: Callable[[pd.DataFrame], float] | str = "win",
    chunk_minutes: float = 45.0,
    order_by: str | None = "created_at",
    drop_partial: bool = True,
    ddof: int = 1,
) -> dict:
    """000 Appendix E: split time-ordered ratings into chunks of `chunk_minutes` of annotator time
    and report the standard deviation of the win rate across chunks.

    `score` is a column of 0/1 (or ½) outcomes whose mean is the chunk's win rate, or a callable
    computing the rate from a chunk's rows (e.g. Lin over a turn range). The last chunk is dropped
    when it holds less than the full time (`drop_partial`) and other chunks exist. Returns
    {chunks, rates, seconds, std}; std is None with fewer than two chunks.
    """
    d = frame
    if order_by is not None and order_by in d.columns and d[order_by].notna().all():
        d = d.sort_values(order_by, kind="stable")
    labels = chunk_labels(d[seconds].to_numpy(), chunk_minutes)
    d = d.assign(_chunk=labels)
    secs = d.groupby("_chunk")[seconds].sum()
    fn = (lambda g: float(g[score].mean())) if isinstance(score, str) else score
    rates = d.groupby("_chunk").apply(fn, include_groups=False) if len(d) else pd.Series(dtype=float)
    if drop_partial and len(rates) > 1 and secs.iloc[-1] < chunk_minutes * 60.0:
        rates, secs = rates.iloc[:-1], secs.iloc[:-1]
    vals = rates.to_numpy(dtype=float)
    vals_ok = vals[np.isfinite(vals)]
    return {
        "chunk_minutes": chunk_minutes,
        "chunks": len(vals_ok),
        "rates": [float(v) for v in vals],
        "seconds": [float(v) for v in secs.to_numpy()],
        "std": float(np.std(vals_ok, ddof=ddof)) if len(vals_ok) > ddof and len(vals_ok) >= 2 else None,
    }
