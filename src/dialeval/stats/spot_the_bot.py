"""Spot The Bot statistics (Deriu et al. 2020): win function, pairwise win rates, agreement, time, stability.

Pure: pandas/numpy/scipy in, DataFrames and dicts out; nothing from the project.

The input is an *annotation frame*, one row per annotated segment (one annotator, one segment):

==================  =====================================================================
``system0/1``       the systems of entity 0 and entity 1
``label0/1``        ``"human"`` | ``"unsure"`` | ``"bot"``
``conversation_id`` the conversation (segments of one conversation share it)
``exchanges``       the segment length k (number of exchanges shown)
``fluency`` ...     which entity did better on a feature: 0, 1, ``"tie"`` or None
==================  =====================================================================

Only the columns a function needs must be present.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from scipy.stats import chi2_contingency

from .reliability import krippendorff_alpha

LABEL_SCORE = {"human": 2, "unsure": 1, "bot": 0}
LABELS = ("human", "unsure", "bot")
FEATURES = ("fluency", "sensibleness", "specificity")


# --- the win function -------------------------------------------------------------------------------


def win_outcome(label0: str, label1: str) -> int:
    """+1 if entity 0 wins the segment, -1 if entity 1 wins, 0 for a draw (human > unsure > bot)."""
    s0, s1 = LABEL_SCORE[label0], LABEL_SCORE[label1]
    return int(np.sign(s0 - s1))


def win_outcomes(label0: Iterable[str], label1: Iterable[str]) -> np.ndarray:
    """Vectorised :func:`win_outcome`: an int array of +1 / -1 / 0."""
    s0, s1 = _label_scores(label0), _label_scores(label1)
    return np.sign(s0 - s1).astype(int)


_SCORES = pd.Index(list(LABEL_SCORE))
_SCORE_OF = np.array(list(LABEL_SCORE.values()))


def _label_scores(labels: Iterable[str]) -> np.ndarray:
    """LABEL_SCORE of each label by one hash lookup of the column (a Series.map per call was most of
    the time of a ranking, redone for every bootstrap seed and subsample)."""
    values = labels.to_numpy(dtype=object) if isinstance(labels, pd.Series) else np.asarray(list(labels), dtype=object)
    codes = _SCORES.get_indexer(values)
    if (codes < 0).any():
        raise ValueError(f"labels must be one of {LABELS}")
    return _SCORE_OF[codes]


def feature_outcomes(winners: Iterable[object]) -> np.ndarray:
    """A feature column (0, 1, 'tie', None) as +1 (entity 0 better), -1 (entity 1 better), 0 (tie or none)."""
    values = pd.Series(list(winners), dtype=object)
    numeric = values.map(lambda w: w if isinstance(w, (int, float, np.integer)) and not isinstance(w, bool) else None)
    out = np.zeros(len(values), dtype=int)
    out[(numeric == 0).to_numpy()] = 1
    out[(numeric == 1).to_numpy()] = -1
    return out


def matches(frame: pd.DataFrame, feature: str | None = None) -> pd.DataFrame:
    """One match per annotation: columns ``a, b, outcome`` (+1 a wins, -1 b wins, 0 draw).

    ``feature=None`` uses the human/unsure/bot labels; a feature name uses that feature's preference.
    """
    if feature is None:
        outcome = win_outcomes(frame["label0"], frame["label1"])
    else:
        outcome = feature_outcomes(frame[feature])
    return pd.DataFrame(
        {"a": frame["system0"].to_numpy(), "b": frame["system1"].to_numpy(), "outcome": outcome},
        index=frame.index,
    )


# --- pairwise win rates --------------------------------------------------------------------------------


def chi_square_p(wins: int, losses: int, total: int, correction: bool = True) -> float:
    """p of the chi-square test on ``[[wins, losses], [total - wins, total - losses]]``.

    As in the released code (scipy ``chi2_contingency`` with its default Yates ``correction=True``);
    ``total`` counts every annotation of the pair, draws included. Returns 1.0 when the table is
    degenerate (a zero row or column).
    """
    table = np.array([[wins, losses], [total - wins, total - losses]], dtype=float)
    if (table < 0).any():
        raise ValueError("wins and losses cannot exceed total")
    if (table.sum(axis=0) == 0).any() or (table.sum(axis=1) == 0).any():
        return 1.0
    return float(chi2_contingency(table, correction=correction)[1])


def pairwise_win_rates(frame: pd.DataFrame, feature: str | None = None, correction: bool = True) -> pd.DataFrame:
    """Win rate of every ordered pair of systems that met: WINS(a,b) / (WINS(a,b) + WINS(b,a)).

    Columns ``a, b, wins, losses, draws, total, win_rate, p`` (both directions are listed; the p of
    the chi-square test is the same in both). ``win_rate`` is NaN when all matches were draws.
    """
    m = matches(frame, feature)
    rows = []
    pair_key = [tuple(sorted((a, b))) for a, b in zip(m["a"], m["b"])]
    m = m.assign(pair=pair_key)
    for (x, y), g in m.groupby("pair", sort=True):
        if x == y:
            continue  # a system against itself says nothing about ranking
        x_wins = int(((g["a"] == x) & (g["outcome"] == 1)).sum() + ((g["b"] == x) & (g["outcome"] == -1)).sum())
        y_wins = int(((g["a"] == y) & (g["outcome"] == 1)).sum() + ((g["b"] == y) & (g["outcome"] == -1)).sum())
        total = len(g)
        draws = total - x_wins - y_wins
        p = chi_square_p(x_wins, y_wins, total, correction=correction)
        decisive = x_wins + y_wins
        for a, b, w, lost in ((x, y, x_wins, y_wins), (y, x, y_wins, x_wins)):
            rows.append(
                {
                    "a": a,
                    "b": b,
                    "wins": w,
                    "losses": lost,
                    "draws": draws,
                    "total": total,
                    "win_rate": w / decisive if decisive else float("nan"),
                    "p": p,
                }
            )
    return pd.DataFrame(rows, columns=["a", "b", "wins", "losses", "draws", "total", "win_rate", "p"])


def system_scores(win_rates: pd.DataFrame) -> pd.Series:
    """A system's score = the mean of its pairwise win rates (pairs without decisive matches skipped)."""
    return win_rates.groupby("a")["win_rate"].mean().sort_values(ascending=False).rename("score")


def win_rate_matrix(win_rates: pd.DataFrame) -> pd.DataFrame:
    """The win-rate grid: row system's win rate against the column system."""
    return win_rates.pivot(index="a", columns="b", values="win_rate")


# --- agreement -----------------------------------------------------------------------------------------


def _segment_groups(frame: pd.DataFrame) -> Iterable[pd.DataFrame]:
    keys = ["conversation_id", "exchanges"]
    for _, g in frame.groupby(keys, sort=False):
        yield g


def label_agreement(frame: pd.DataFrame, n_annotations: int = 2) -> pd.DataFrame:
    """Per system and label: the share of annotations with that label whose co-annotation agrees.

    On segments with exactly ``n_annotations`` (2) annotations, for each entity: every annotation
    with label L adds 1 if both annotators chose L, else 0 (as the released code counts); the
    agreement of (system, L) is the mean, i.e. 2·both / (2·both + one). Chance is 1/3.
    Columns ``system, label, agreement, n``.
    """
    # grouped operations over all segments at once (a Python loop per segment was the cost at 100k)
    keys = ["conversation_id", "exchanges"]
    segments = frame.groupby(keys, sort=False, dropna=False)
    f = frame[segments["system0"].transform("size").to_numpy() == n_annotations]
    tallies: dict[tuple[str, str], list[int]] = {}
    if len(f):
        by = f.groupby(keys, sort=False, dropna=False)
        for e in (0, 1):
            system = by[f"system{e}"].transform("first").to_numpy()
            # distinct labels per segment, a missing label counting as one more label (as set() does)
            labels = f[f"label{e}"].astype(object).where(f[f"label{e}"].notna(), "\x00missing")
            distinct = labels.groupby([f[k] for k in keys], sort=False, dropna=False).transform("nunique")
            agree = (distinct.to_numpy() == 1).astype(int)
            for (sys_, label), a in zip(zip(system, f[f"label{e}"].to_numpy()), agree):
                tally = tallies.setdefault((sys_, label), [0, 0])
                tally[0] += int(a)
                tally[1] += 1
    rows = [
        {"system": s, "label": lab, "agreement": both / n, "n": n} for (s, lab), (both, n) in sorted(tallies.items())
    ]
    return pd.DataFrame(rows, columns=["system", "label", "agreement", "n"])


def _abs_distance(a: float, b: float) -> float:
    # |a - b| on the values -1, 0, +1: a tie against a preference counts half a disagreement (as the
    # released code's distance: 0 same, 0.5 one tie, 1 opposite; alpha does not depend on the scale).
    return abs(a - b)


def feature_reliability_data(frame: pd.DataFrame, feature: str) -> np.ndarray:
    """The reliability data matrix of one feature (coders x units, NaN where missing), as
    :func:`feature_alpha` rates it. Empty (0 x 0) when no segment has two annotations."""
    keys = ["conversation_id", "exchanges"]
    sizes = frame.groupby(keys)["system0"].transform("size")
    f = frame[sizes >= 2]
    if f.empty:
        return np.empty((0, 0))
    unit = f.groupby(keys, sort=False).ngroup().to_numpy()
    coder = f.groupby(keys, sort=False).cumcount().to_numpy()
    flip = np.where(f["system0"].astype(str).to_numpy() <= f["system1"].astype(str).to_numpy(), 1, -1)
    data = np.full((coder.max() + 1, unit.max() + 1), np.nan)
    data[coder, unit] = feature_outcomes(f[feature]) * flip
    return data


def feature_alpha(frame: pd.DataFrame, features: Sequence[str] = FEATURES) -> dict[str, float]:
    """Krippendorff's alpha per feature over segments (unit = conversation × segment length).

    Values are oriented by the alphabetically first system of the pair (+1 it did better, 0 tie,
    -1 worse) so that pooling pairs is meaningful; distance |a - b|. Ties of "neither" count as 0.
    Segments with a single annotation are left out (they carry no agreement information).
    """
    return {
        feature: krippendorff_alpha(feature_reliability_data(frame, feature), _abs_distance) for feature in features
    }


# --- time ----------------------------------------------------------------------------------------------


def time_summary(elapsed_s: Iterable[float | None]) -> dict[str, float]:
    """Seconds per annotation: mean, median, and a mean without idle outliers (> 10 minutes)."""
    x = pd.Series(list(elapsed_s), dtype=float).dropna()
    x = x[x >= 0]
    if x.empty:
        return {"n": 0, "mean_s": float("nan"), "median_s": float("nan"), "mean_s_under_10min": float("nan")}
    short = x[x <= 600]
    return {
        "n": len(x),
        "mean_s": float(x.mean()),
        "median_s": float(x.median()),
        "mean_s_under_10min": float(short.mean()) if len(short) else float("nan"),
    }


# --- stability -----------------------------------------------------------------------------------------


def score_order(frame: pd.DataFrame) -> list[str]:
    """Systems ordered by their score (mean pairwise win rate), best first."""
    return list(system_scores(pairwise_win_rates(frame)).index)


def leave_one_out(
    frame: pd.DataFrame, rank_fn: Callable[[pd.DataFrame], Sequence] | None = None
) -> list[dict[str, object]]:
    """Drop each system in turn (all its matches) and check whether the rest keep their order.

    ``rank_fn(frame)`` returns the ranking to compare, best first (default :func:`score_order`);
    it may return a list of names or a list of clusters (sets of names). A ranking is "the same"
    when it equals the full ranking with the dropped system removed (empty clusters dropped).
    """
    rank_fn = rank_fn or score_order
    full = rank_fn(frame)
    systems = sorted(set(frame["system0"]) | set(frame["system1"]))
    out = []
    for left_out in systems:
        sub = frame[(frame["system0"] != left_out) & (frame["system1"] != left_out)]
        got = rank_fn(sub)
        expected = _without(full, left_out)
        out.append(
            {
                "left_out": left_out,
                "ranking": _jsonable(got),
                "expected": _jsonable(expected),
                "same": _normal(got) == _normal(expected),
            }
        )
    return out


def _without(ranking: Sequence, name: str) -> list:
    out = []
    for item in ranking:
        if isinstance(item, (set, frozenset, list, tuple)):
            rest = [x for x in item if x != name]
            if rest:
                out.append(sorted(rest))
        elif item != name:
            out.append(item)
    return out


def _normal(ranking: Sequence) -> list:
    return [sorted(x) if isinstance(x, (set, frozenset, list, tuple)) else x for x in ranking]


def _jsonable(ranking: Sequence) -> list:
    return _normal(ranking)


def pair_subsample(frame: pd.DataFrame, k: int, rng: np.random.Generator) -> pd.DataFrame:
    """Keep ``k`` random conversations per (unordered) system pair, all their annotations."""
    return frame[_PairPools(frame).draw(k, rng)]


class _PairPools:
    """The conversations of each system pair of a frame, found once for many draws of
    :func:`pair_subsample`: conversations coded as integers, the pairs in sorted order, each pair's
    conversations in the order they first appear. A draw picks k positions of each pool by
    ``rng.choice`` (the positions do not depend on what the pool holds), so the same generator
    picks the same conversations as drawing from their ids."""

    def __init__(self, frame: pd.DataFrame) -> None:
        codes, uniques = pd.factorize(frame["conversation_id"], use_na_sentinel=False)
        self.row_codes = codes
        self.n_codes = len(uniques)
        # one row per conversation first: the pair is a property of the conversation
        conv = frame[["system0", "system1"]].assign(code=codes).drop_duplicates("code")
        pairs = [tuple(sorted(p)) for p in zip(conv["system0"], conv["system1"])]
        conv = conv[["code"]].assign(pair=pairs)
        self.pools = [g["code"].to_numpy() for _, g in conv.groupby("pair")]

    def draw(self, k: int, rng: np.random.Generator) -> np.ndarray:
        """A mask of the frame's rows: those of ``k`` random conversations per pair."""
        chosen = np.zeros(self.n_codes, dtype=bool)
        for ids in self.pools:
            chosen[rng.choice(ids, size=min(k, len(ids)), replace=False)] = True
        return chosen[self.row_codes]


def subsample_stability(
    frame: pd.DataFrame,
    sizes: Iterable[int],
    rank_fn: Callable[[pd.DataFrame], Sequence],
    n_repeats: int = 20,
    seed: int = 0,
    reference: Sequence | None = None,
) -> pd.DataFrame:
    """For each k in ``sizes``: draw k conversations per pair ``n_repeats`` times, rank each draw and
    report the share of draws that give the most frequent ranking (columns ``k, modal_share, modal``).

    With ``reference`` (a ranking, e.g. ``rank_fn(frame)`` on all the data) the share of draws that
    reproduce it is added as ``reference_share``, and ``n_rankings`` counts the distinct rankings."""
    rng = np.random.default_rng(seed)
    ref_key = repr(_normal(reference)) if reference is not None else None
    pools = _PairPools(frame)  # the same for every draw
    rows = []
    for k in sizes:
        counts: dict[str, int] = {}
        for _ in range(n_repeats):
            key = repr(_normal(rank_fn(frame[pools.draw(k, rng)])))
            counts[key] = counts.get(key, 0) + 1
        modal, n = max(counts.items(), key=lambda kv: kv[1])
        row = {"k": int(k), "modal_share": n / n_repeats, "modal": modal, "n_rankings": len(counts)}
        if ref_key is not None:
            row["reference_share"] = counts.get(ref_key, 0) / n_repeats
        rows.append(row)
    columns = ["k", "modal_share", "modal", "n_rankings"] + (["reference_share"] if ref_key is not None else [])
    return pd.DataFrame(rows, columns=columns)


def feature_win_rates(
    frame: pd.DataFrame, features: Sequence[str] = FEATURES, correction: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-feature win rates (Deriu et al. 2020, Table 2), computed as Eq. 1 on the feature preferences
    (entity that did better wins, ties are draws).

    Returns ``(pairwise, systems)``: ``pairwise`` has the columns of :func:`pairwise_win_rates` plus
    ``feature``; ``systems`` is one row per system (index) and one column per feature: the mean of
    the system's pairwise feature win rates, as its score is the mean of its pairwise win rates.
    """
    parts = []
    for feature in features:
        parts.append(pairwise_win_rates(frame, feature=feature, correction=correction).assign(feature=feature))
    pairwise = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    cols = ["feature", "a", "b", "wins", "losses", "draws", "total", "win_rate", "p"]
    pairwise = pairwise.reindex(columns=cols)
    systems = pairwise.groupby(["a", "feature"])["win_rate"].mean().unstack("feature")
    systems = systems.reindex(columns=list(features))
    systems.index.name = "system"
    return pairwise, systems


def pairs_of(systems: Iterable[str]) -> list[tuple[str, str]]:
    """All unordered pairs of the given systems, sorted."""
    return list(combinations(sorted(set(systems)), 2))


def conversation_matches(frame: pd.DataFrame) -> pd.DataFrame:
    """One match per conversation (the released code's non-"naive" matches): columns ``a, b, outcome``.

    Per segment, the entity that wins more of the segment's annotations wins the segment (a tie is
    broken by the summed label scores, human 2 / unsure 1 / bot 0); the conversation goes to the
    entity whose won segments have more exchanges in total (longer segments weigh more); else a draw.
    """
    columns = ["a", "b", "outcome", "conversation_id"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    s0 = frame["label0"].map(LABEL_SCORE).to_numpy(int)
    s1 = frame["label1"].map(LABEL_SCORE).to_numpy(int)
    work = pd.DataFrame(
        {
            "conversation_id": frame["conversation_id"].to_numpy(),
            "exchanges": frame["exchanges"].to_numpy(int),
            "w0": (s0 > s1).astype(int),
            "w1": (s1 > s0).astype(int),
            "s0": s0,
            "s1": s1,
        }
    )
    seg = work.groupby(["conversation_id", "exchanges"], sort=False).sum().reset_index()
    d = np.sign(seg["w0"] - seg["w1"]).to_numpy()
    d = np.where(d == 0, np.sign(seg["s0"] - seg["s1"]).to_numpy(), d)
    seg["weight"] = d * seg["exchanges"].to_numpy()
    conv = seg.groupby("conversation_id", sort=True)["weight"].sum()  # sorted: input order does not matter
    first = frame.drop_duplicates("conversation_id").set_index("conversation_id")
    return pd.DataFrame(
        {
            "a": first.loc[conv.index, "system0"].to_numpy(),
            "b": first.loc[conv.index, "system1"].to_numpy(),
            "outcome": np.sign(conv.to_numpy()).astype(int),
            "conversation_id": conv.index.to_numpy(),
        },
        columns=columns,
    )
