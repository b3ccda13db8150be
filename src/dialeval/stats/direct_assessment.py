"""Direct Assessment statistics (Ji et al. 2022). Pure: DataFrames in, DataFrames out.

Input frame (`ratings`): one row per rated conversation with columns
  annotator, conversation, system, is_qc (bool), and one column per criterion (raw 0..100 slider
  positions, negative criteria NOT yet reversed); optional: unit (the HIT/assignment), elapsed_s.

The pipeline: `reverse_negatives` -> `standardize` (per-annotator z over all of that annotator's
scores, QC conversations included) -> `qc_test` (one-sided Mann-Whitney U per annotator, QC bot
scores < ordinary-bot scores on the positive criteria, pooled over all their HITs) ->
`system_scores` / `raw_system_scores` from the annotators who pass -> `pairwise_tests`,
`criteria_correlations`, `rater_agreement`, `pass_rates`, `minutes_per_conversation`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import permutations

import numpy as np
import pandas as pd
from scipy import stats

CRITERIA = ("robotic", "interesting", "fun", "consistent", "fluent", "repetitive", "topic")
NEGATIVE = ("robotic", "repetitive")
POSITIVE = tuple(c for c in CRITERIA if c not in NEGATIVE)
# Column order of the paper's tables (Table 3): positive criteria first, then the reversed ones.
PAPER_ORDER = ("interesting", "fun", "consistent", "fluent", "topic", "robotic", "repetitive")
SCALE_MAX = 100.0
# rater_agreement: at most this many unit pairs per group of units that rated the same systems
MAX_AGREEMENT_PAIRS = 200_000


def reverse_negatives(
    ratings: pd.DataFrame, negative: Iterable[str] = NEGATIVE, scale_max: float = SCALE_MAX
) -> pd.DataFrame:
    """A copy with each negative criterion replaced by scale_max - x (so higher is always better)."""
    out = ratings.copy()
    for c in negative:
        if c in out.columns:
            out[c] = scale_max - out[c].astype(float)
    return out


def standardize(ratings: pd.DataFrame, criteria: Sequence[str] = CRITERIA) -> pd.DataFrame:
    """Add per-annotator z-scores. Expects scores already reversed.

    Each annotator's mean and SD (ddof=1) are taken over ALL their scores: every criterion of every
    conversation they rated, the QC ones included. Adds `z_<criterion>`, `z` (the mean over the
    criteria of one conversation), `raw` (the mean raw score), `annotator_mean`, `annotator_sd`.
    An annotator whose scores are all equal (SD 0 or undefined) gets NaN z-scores.
    """
    criteria = list(criteria)
    out = ratings.copy()
    values = out[criteria].astype(float)
    long = values.assign(annotator=out["annotator"].values).melt(id_vars="annotator", value_name="x")
    grouped = long.groupby("annotator")["x"]
    mean, sd = grouped.mean(), grouped.std(ddof=1)
    sd = sd.where(sd > 0)
    out["annotator_mean"] = out["annotator"].map(mean).astype(float)
    out["annotator_sd"] = out["annotator"].map(sd).astype(float)
    for c in criteria:
        out[f"z_{c}"] = (values[c] - out["annotator_mean"]) / out["annotator_sd"]
    out["z"] = out[[f"z_{c}" for c in criteria]].mean(axis=1, skipna=False)
    out["raw"] = values.mean(axis=1)
    return out


def qc_test(
    ratings: pd.DataFrame,
    criteria: Sequence[str] = POSITIVE,
    alpha: float = 0.05,
    method: str = "asymptotic",
) -> pd.DataFrame:
    """Per-annotator quality-control test. One row per annotator (index), columns:
    p, n_qc, n_ordinary (scores pooled over all their conversations), passed, reason.

    H1: the annotator's scores for the degraded QC bot are stochastically smaller than for the
    ordinary bots (one-sided Mann-Whitney U, `alternative='less'`), on the positive criteria only
    (raw and z give the same ranks). Pass when p < alpha. The asymptotic method (normal
    approximation with continuity correction and tie correction) is the one that reproduces the
    published pass/fail labels (173 of 249 workers in Free run 1); scipy's exact method gives 167.
    Annotators without QC or without ordinary ratings, or with constant scores, fail with p = 1.
    """
    criteria = list(criteria)
    columns = ["annotator", "p", "n_qc", "n_ordinary", "passed", "reason"]
    annotators = pd.Index(pd.unique(ratings["annotator"])).sort_values()
    # One long frame of (annotator, is_qc, score) for every non-missing score, then the per-annotator
    # U statistic, tie term and normal approximation in a few grouped operations (no loop per
    # annotator; the formula is scipy.stats.mannwhitneyu's asymptotic one, alternative="less").
    values = ratings[criteria].to_numpy(dtype=float)
    long = pd.DataFrame(
        {
            "annotator": np.repeat(ratings["annotator"].to_numpy(), len(criteria)),
            "qc": np.repeat(ratings["is_qc"].astype(bool).to_numpy(), len(criteria)),
            "x": values.ravel(),
        }
    )
    long = long[~np.isnan(long["x"].to_numpy())]
    by = long.groupby("annotator", sort=True)
    n_qc = by["qc"].sum().reindex(annotators, fill_value=0).astype(int)
    n_all = by.size().reindex(annotators, fill_value=0).astype(int)
    n_ord = n_all - n_qc
    spread = (by["x"].max() - by["x"].min()).reindex(annotators)
    rank = by["x"].rank(method="average")
    r_qc = (
        rank[long["qc"].to_numpy()].groupby(long.loc[long["qc"], "annotator"]).sum().reindex(annotators, fill_value=0.0)
    )
    ties = long.groupby(["annotator", "x"], sort=False).size().astype(float)
    tie_term = (ties**3 - ties).groupby(level=0).sum().reindex(annotators, fill_value=0.0)
    n1, n2 = n_qc.to_numpy(dtype=float), n_ord.to_numpy(dtype=float)
    n = n1 + n2
    u1 = r_qc.to_numpy() - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1  # 'less' uses the sf of U2 (scipy: symmetry)
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term.to_numpy() / (n * (n - 1))))
        z = (u2 - n1 * n2 / 2 - 0.5) / sd
    p = np.clip(stats.norm.sf(z), 0, 1)
    if method != "asymptotic":  # the exact method has no closed vector form: scipy per annotator
        for k, a in enumerate(annotators):
            if n1[k] and n2[k] and spread.iloc[k] > 0:
                d = long[long["annotator"] == a]
                p[k] = stats.mannwhitneyu(
                    d.loc[d["qc"], "x"], d.loc[~d["qc"], "x"], alternative="less", method=method
                ).pvalue
    no_qc, no_ord = n1 == 0, n2 == 0
    constant = ~(no_qc | no_ord) & ~(spread.to_numpy() > 0)
    p = np.where(no_qc | no_ord | constant, 1.0, p)
    passed = p < alpha
    reason = [
        "no QC ratings"
        if a
        else "no ordinary-bot ratings"
        if b
        else "constant scores"
        if c
        else None
        if ok
        else f"QC bot not rated lower (p >= {alpha:g})"
        for a, b, c, ok in zip(no_qc, no_ord, constant, passed)
    ]
    out = pd.DataFrame(
        {
            "annotator": annotators,
            "p": p.astype(float),
            "n_qc": n_qc.to_numpy(),
            "n_ordinary": n_ord.to_numpy(),
            "passed": passed.astype(bool),
            "reason": reason,
        },
        columns=columns,
    )
    out["reason"] = out["reason"].astype(object).where(out["reason"].notna(), None)
    return out.set_index("annotator")


def _system_table(ratings: pd.DataFrame, criteria: Sequence[str], prefix: str, overall: str) -> pd.DataFrame:
    cols = [f"{prefix}{c}" for c in criteria]
    rows = []
    for system, d in ratings.groupby("system", sort=False):
        block = d[cols].to_numpy(dtype=float)
        row = {"system": system, "conversations": len(d), "n": int(block.size), overall: float(np.mean(block))}
        row.update({c: float(v) for c, v in zip(criteria, block.mean(axis=0))})
        rows.append(row)
    table = pd.DataFrame(rows, columns=["system", "conversations", "n", overall, *criteria])
    return table.sort_values(overall, ascending=False, kind="mergesort").set_index("system")


def system_scores(z_ratings: pd.DataFrame, criteria: Sequence[str] = PAPER_ORDER) -> pd.DataFrame:
    """Mean z per system: `overall` (mean over all criteria of all the system's conversations),
    one column per criterion, `n` = number of ratings (conversations x criteria). Best first.
    Pass only the rows to count (passing annotators; QC rows if wanted)."""
    return _system_table(z_ratings, criteria, "z_", "overall")


def raw_system_scores(ratings: pd.DataFrame, criteria: Sequence[str] = PAPER_ORDER) -> pd.DataFrame:
    """Mean raw score (negatives as given, normally reversed) per system, same layout as system_scores."""
    return _system_table(ratings, criteria, "", "overall")


def pairwise_tests(z_ratings: pd.DataFrame, systems: Sequence[str] | None = None, column: str = "z") -> pd.DataFrame:
    """For every ordered pair (a, b): one-sided Mann-Whitney U (Wilcoxon rank-sum) p that a's
    per-conversation mean z is greater than b's. Rows a, b, p, n_a, n_b."""
    if systems is None:
        systems = list(dict.fromkeys(z_ratings["system"]))
    samples = {s: z_ratings.loc[z_ratings["system"] == s, column].dropna().to_numpy(dtype=float) for s in systems}
    rows = []
    for a, b in permutations(systems, 2):
        x, y = samples[a], samples[b]
        p = float(stats.mannwhitneyu(x, y, alternative="greater").pvalue) if len(x) and len(y) else float("nan")
        rows.append({"a": a, "b": b, "p": p, "n_a": len(x), "n_b": len(y)})
    return pd.DataFrame(rows, columns=["a", "b", "p", "n_a", "n_b"])


def significance_matrix(pairwise: pd.DataFrame, order: Sequence[str] | None = None) -> pd.DataFrame:
    """Pairwise p-values as a square matrix: row a beats column b with p = cell."""
    m = pairwise.pivot(index="a", columns="b", values="p")
    if order is not None:
        m = m.reindex(index=list(order), columns=list(order))
    return m


def criteria_correlations(table: pd.DataFrame, columns: Sequence[str] | None = None) -> dict[str, pd.DataFrame]:
    """System-level correlation between criteria (paper Table 8): {"pearson": matrix, "spearman": matrix}
    computed across the rows (systems) of a system score table."""
    columns = list(columns) if columns is not None else [c for c in table.columns if c not in ("n", "conversations")]
    data = table[columns].astype(float)
    return {"pearson": data.corr(method="pearson"), "spearman": data.corr(method="spearman")}


def rater_agreement(
    z_ratings: pd.DataFrame, unit: str = "unit", column: str = "z", max_pairs: int | None = MAX_AGREEMENT_PAIRS
) -> pd.DataFrame:
    """Pearson r between pairs of annotators who rated the same set of bots (paper Fig. 2).

    Units (HITs/assignments) are grouped by the sorted set of systems they rated; for every pair of
    units in a group by different annotators, r is taken between their per-conversation mean z
    aligned by system. Rows: unit_a, unit_b, annotator_a, annotator_b, r, n.

    The pairs of a group grow with the square of its units, so a group with more than `max_pairs`
    pairs is summarised by a seeded random sample of `max_pairs` of them (None: every pair). The
    published studies are far below the cap (Free run 1: 793 pairs in all).
    """
    cols = ["unit_a", "unit_b", "annotator_a", "annotator_b", "r", "n"]
    d = z_ratings[[unit, "system", "annotator", column]].sort_values([unit, "system"], kind="mergesort")
    if d.empty:  # e.g. no annotator failed QC: no ratings in this part, no pairs
        return pd.DataFrame(columns=cols)
    u_codes, units = pd.factorize(d[unit], sort=True)
    systems = d["system"].to_numpy()
    starts = np.flatnonzero(np.r_[True, u_codes[1:] != u_codes[:-1]])
    bounds = np.r_[starts, len(d)]
    keys = ["\x1f".join(map(str, systems[lo:hi])) for lo, hi in zip(bounds[:-1], bounds[1:])]
    dup = np.zeros(len(starts), dtype=bool)  # a system rated twice in one unit: no unique alignment
    same = np.r_[False, (systems[1:] == systems[:-1]) & (u_codes[1:] == u_codes[:-1])]
    dup[np.unique(u_codes[same])] = True
    first_annotator = d["annotator"].to_numpy()[starts]
    values = d[column].to_numpy(dtype=float)
    groups: dict[str, list[int]] = {}
    for k, key in enumerate(keys):
        if not dup[k]:
            groups.setdefault(key, []).append(k)
    parts = []
    for listed in groups.values():
        if len(listed) < 2:
            continue
        members = np.asarray(listed)
        size = bounds[members[0] + 1] - bounds[members[0]]
        X = np.stack([values[bounds[k] : bounds[k] + size] for k in members])  # units x systems
        parts.append(_group_correlations(X, members, first_annotator, units, max_pairs))
    if not parts:
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts, ignore_index=True)
    return out[cols]


def _group_correlations(
    X: np.ndarray, members: np.ndarray, annotators: np.ndarray, units: pd.Index, max_pairs: int | None
) -> pd.DataFrame:
    """Pearson r for the pairs of rows of X (units rating the same systems) by different annotators.
    Complete rows go through one matrix product; rows with missing values pair by pair."""
    g = len(members)
    ia, ib = np.triu_indices(g, k=1)
    if max_pairs is not None and ia.size > max_pairs:  # documented cap: a seeded random sample of pairs
        pick = np.sort(np.random.default_rng(0).choice(ia.size, max_pairs, replace=False))
        ia, ib = ia[pick], ib[pick]
    ann = annotators[members]
    keep = ann[ia] != ann[ib]
    ia, ib = ia[keep], ib[keep]
    complete = ~np.isnan(X).any(axis=1)
    r = np.full(ia.size, np.nan)
    n = np.zeros(ia.size, dtype=int)
    both = complete[ia] & complete[ib]
    if X.shape[1] >= 3:
        # each row centred and scaled once, in the order of operations of scipy.stats.pearsonr (so r
        # is the same number), then one dot product per pair
        centred = X - X.mean(axis=1, keepdims=True)
        ok_row = complete & (np.ptp(np.where(complete[:, None], X, 0.0), axis=1) > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            top = np.max(np.abs(centred), axis=1, keepdims=True)
            norm = top * np.linalg.norm(centred / top, axis=1, keepdims=True)
            unit_vec = centred / norm
        sel = both & ok_row[ia] & ok_row[ib]
        r[sel] = np.vecdot(unit_vec[ia[sel]], unit_vec[ib[sel]])  # over the last axis
        n[sel] = X.shape[1]
    for k in np.flatnonzero(~both):  # rows with gaps: align on the systems both rated
        xa, xb = X[ia[k]], X[ib[k]]
        ok = ~(np.isnan(xa) | np.isnan(xb))
        if ok.sum() < 3 or np.ptp(xa[ok]) == 0 or np.ptp(xb[ok]) == 0:
            continue
        r[k] = float(stats.pearsonr(xa[ok], xb[ok]).statistic)
        n[k] = int(ok.sum())
    good = ~np.isnan(r)
    ia, ib, r, n = ia[good], ib[good], np.clip(r[good], -1.0, 1.0), n[good]
    return pd.DataFrame(
        {
            "unit_a": units[members[ia]],
            "unit_b": units[members[ib]],
            "annotator_a": ann[ia],
            "annotator_b": ann[ib],
            "r": r,
            "n": n,
        }
    )


def summarize_correlations(values: Sequence[float]) -> dict[str, float | int | None]:
    """Count, mean, median, quartiles, the peak bin and a 0.1-wide histogram over [-1, 1] of a list
    of correlation coefficients (None when empty)."""
    arr = np.asarray(list(values), dtype=float)
    if arr.size == 0:
        return {"pairs": 0, "mean": None, "median": None, "q1": None, "q3": None, "peak": None, "histogram": []}
    edges = np.round(np.linspace(-1.0, 1.0, 21), 1)
    counts, _ = np.histogram(np.clip(arr, -1.0, 1.0), bins=edges)
    return {
        "pairs": int(arr.size),
        "mean": float(arr.mean()),
        "median": float(np.median(arr)),
        "q1": float(np.quantile(arr, 0.25)),
        "q3": float(np.quantile(arr, 0.75)),
        "peak": float(edges[int(counts.argmax())]),  # lower edge of the fullest 0.1-wide bin
        "histogram": [
            {"from": float(lo), "to": float(hi), "count": int(c)} for lo, hi, c in zip(edges[:-1], edges[1:], counts)
        ],
    }


def pass_rates(qc: pd.DataFrame, total_annotators: int | None = None) -> dict[str, float | int]:
    """Annotators passing QC. `total_annotators` counts annotators without any rating too
    (for example an empty submission), who fail."""
    total = int(total_annotators if total_annotators is not None else len(qc))
    passed = int(qc["passed"].sum())
    return {
        "total": total,
        "passed": passed,
        "failed": total - passed,
        "pass_rate": passed / total if total else float("nan"),
    }


def minutes_per_conversation(
    ratings: pd.DataFrame, passed: Iterable[str], elapsed: str = "elapsed_s"
) -> dict[str, float | None]:
    """Mean minutes per rated conversation (QC ones included) for passing, failing and all annotators."""
    passed = set(passed)
    mask = ratings["annotator"].isin(passed)
    secs = ratings[elapsed].astype(float)

    def mean(sel: pd.Series) -> float | None:
        v = sel.dropna()
        return float(v.mean() / 60.0) if len(v) else None

    return {"passed": mean(secs[mask]), "failed": mean(secs[~mask]), "all": mean(secs)}


def correlate(a: Sequence[float], b: Sequence[float]) -> dict[str, float | None]:
    """Pearson and Spearman r between two paired sequences (None when fewer than 3 pairs or constant)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"pearson": None, "spearman": None, "n": len(x)}
    return {
        "pearson": float(stats.pearsonr(x, y).statistic),
        "spearman": float(stats.spearmanr(x, y).statistic),
        "n": len(x),
    }
