"""Annotator models: each annotator's reliability and each item's label from the labels alone, a
noise-aware Bradley–Terry for pairwise votes, and a per-voter sequential outlier test.

- ``dawid_skene``: Dawid & Skene (1979, JRSS C), one confusion matrix per annotator, fitted by EM.
- ``mace``: Hovy, Berg-Kirkpatrick, Vaswani & Hovy (2013, NAACL), "MACE": an annotator either
  knows the true label (probability theta, their competence) or spams from their own label
  distribution; EM with a light Beta/Dirichlet smoothing.
- ``crowd_bt``: Chen, Bennett, Collins-Thompson & Horvitz (2013, WSDM), "Crowd-BT": a voter agrees
  with the Bradley–Terry preference with probability eta (their reliability), else reverses it; EM
  alternating voter reliabilities and strengths fitted on the soft counts.
- ``voter_eprocess``: the per-voter test Chatbot Arena screens voters with (FastChat): the product
  over a voter's votes of 1 / (K p), p the share of that outcome in the pair's other votes and K the
  number of outcome kinds (K = 2 without ties gives FastChat's 1/(2p)); under the null that the
  voter votes like everybody else each factor has mean 1, so the product is an e-process (Ville's
  inequality: rejecting when it passes 1/alpha is anytime-valid).

Why our own rather than crowd-kit (Toloka, Apache-2.0): crowd-kit 1.4.2 requires transformers,
nltk, pyarrow and scikit-learn; a throwaway venv with it weighed 778 MB in 49 packages
(transformers, tokenizers and pyarrow are not in dialeval's base install) for four EM loops of ~40
lines each on numpy. Checked once against it on the same simulated labels (benchmarks/README.md,
"Annotator models": Dawid-Skene reliabilities within 0.001, the same MACE labels); the tests check
recovery of simulated parameters and hand-computed cases (tests/stats/test_annotator_models.py).
Pure numpy; imports nothing of dialeval outside stats/.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bradley_terry import fit_bt

__all__ = [
    "CrowdBTFit",
    "LabelModelFit",
    "bootstrap_reliability",
    "crowd_bt",
    "pair_cells",
    "pair_sums",
    "dawid_skene",
    "mace",
    "majority_vote",
    "voter_eprocess",
]

EPS = 1e-9


@dataclass
class LabelModelFit:
    posteriors: np.ndarray  # (items, classes): P(true label | all labels)
    reliability: np.ndarray  # (annotators,): DS expected accuracy / MACE competence theta
    iterations: int
    confusion: np.ndarray | None = None  # DS: (annotators, true, given)
    spam_labels: np.ndarray | None = None  # MACE: (annotators, classes), labels given when not knowing

    @property
    def labels(self) -> np.ndarray:
        return self.posteriors.argmax(axis=1)


def _check(items: np.ndarray, annotators: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    i, a, y = (np.asarray(x, dtype=int) for x in (items, annotators, labels))
    if not (len(i) == len(a) == len(y)):
        raise ValueError("items, annotators and labels must have the same length")
    return i, a, y


def _bincount_onto(index: np.ndarray, start: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``start`` plus ``values`` summed into the cells ``index[len(start):]``, for ``index`` =
    concatenate([arange(len(start)), cells]) built once: np.add.at(start.copy(), cells, values) bit
    for bit (np.bincount adds each cell's own value first, then its values in their order), 3-5
    times faster, and np.add.at's row path took most of a Spot The Bot report."""
    return np.bincount(index, weights=np.concatenate([start, values]), minlength=len(start))


def _row_max(x: np.ndarray) -> np.ndarray:
    """x.max(axis=1) of a 2-D array with few columns, column by column: the same values (a maximum
    is exact), without the slow reduction over a short inner axis."""
    out = x[:, 0].copy()
    for k in range(1, x.shape[1]):
        np.maximum(out, x[:, k], out=out)
    return out


def majority_vote(items, labels, n_items: int, n_classes: int) -> np.ndarray:
    """(items, classes) vote shares; an item without labels is uniform."""
    i, _, y = _check(items, labels, labels)
    counts = np.zeros((n_items, n_classes))
    np.add.at(counts, (i, y), 1.0)
    total = counts.sum(axis=1, keepdims=True)
    return np.where(total > 0, counts / np.maximum(total, EPS), 1.0 / n_classes)


def dawid_skene(
    items,
    annotators,
    labels,
    n_items: int,
    n_annotators: int,
    n_classes: int,
    *,
    max_iter: int = 100,
    tol: float = 1e-6,
) -> LabelModelFit:
    """Dawid–Skene by EM from the majority vote; confusion rows smoothed by 0.01 pseudo-counts."""
    i, a, y = _check(items, annotators, labels)
    T = majority_vote(i, y, n_items, n_classes)
    K = n_classes
    # what does not change between steps, computed once: the cell of each label in an annotator's
    # (given) row, and the bincount indexes of the tables' sums (each cell's own value first)
    ay = a * K + y
    conf_index = np.concatenate([np.arange(n_annotators * K), ay])
    item_index = np.concatenate([np.arange(n_items), i])
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is reported)
        prior = (T.sum(axis=0) + 0.01) / (n_items + 0.01 * n_classes)
        conf = np.full((n_annotators, n_classes, n_classes), 0.01)
        for t in range(n_classes):  # conf[a, t, y] += P(item's true label = t)
            column = T[:, t].take(i)
            conf[:, t, :] = _bincount_onto(conf_index, conf[:, t, :].ravel(), column).reshape(n_annotators, K)
        conf /= conf.sum(axis=2, keepdims=True)
        log_conf = np.log(conf)
        log_prior = np.log(prior)
        log_t = np.empty((n_items, n_classes))
        for t in range(n_classes):  # log prior, then one term per label, in the labels' order
            start = np.full(n_items, log_prior[t])
            log_t[:, t] = _bincount_onto(item_index, start, log_conf[:, t, :].ravel().take(ay))
        log_t -= _row_max(log_t)[:, None]
        new = np.exp(log_t)
        new /= new.sum(axis=1, keepdims=True)
        done = np.abs(new - T).max() < tol
        T = new
        if done:
            break
    # the chance an annotator's label is the true one, weighting true labels by the prior
    reliability = np.einsum("t,att->a", prior, conf)
    return LabelModelFit(T, reliability, it, confusion=conf)


def mace(
    items,
    annotators,
    labels,
    n_items: int,
    n_annotators: int,
    n_classes: int,
    *,
    max_iter: int = 200,
    tol: float = 1e-6,
    restarts: int = 5,
    seed: int = 0,
) -> LabelModelFit:
    """MACE by EM with random restarts (the best log-likelihood kept, as MACE does). The true label's
    prior is uniform; theta and the spam distributions get 0.5 pseudo-counts (a Beta(0.5, 0.5) and
    Dirichlet smoothing that keeps the fit off 0 and 1)."""
    i, a, y = _check(items, annotators, labels)
    rng = np.random.default_rng(seed)
    best: tuple[float, LabelModelFit] | None = None
    K = n_classes
    # P(label | T = t) depends on the label's annotator and value only: computed per (annotator,
    # given, true) and read per label, the same numbers as computed per label, for a fraction
    same = np.eye(n_classes)[None, :, :]  # (1, given, true)
    # what does not change between steps, computed once: where each label reads the tables
    ay = a * K + y  # its (annotator, given) row
    ayy = ay * K + y  # its (annotator, given, true = given) cell
    iy = i * K + y  # its (item, given) cell of the posteriors
    spam_index = np.concatenate([np.arange(n_annotators * K), ay])
    n_a = np.bincount(a, minlength=n_annotators).astype(float)
    for r in range(max(1, restarts)):
        theta = np.full(n_annotators, 0.8) if r == 0 else rng.uniform(0.5, 0.95, n_annotators)
        xi = (
            np.full((n_annotators, n_classes), 1.0 / n_classes)
            if r == 0
            else rng.dirichlet(np.ones(n_classes), n_annotators)
        )
        it, ll = 0, -np.inf
        for it in range(1, max_iter + 1):  # noqa: B007 (the count is reported)
            # E: P(T = t | labels) per item; per label, P(knew it | T = t)
            th = theta[:, None, None]
            like_table = th * same + (1.0 - th) * xi[:, :, None]  # (annotators, given, true)
            log_like = np.log(like_table + EPS).reshape(n_annotators * K, K)
            log_t = np.empty((n_items, n_classes))
            for t in range(n_classes):  # a sum from 0 per item, in the labels' order
                log_t[:, t] = np.bincount(i, weights=log_like[:, t].take(ay), minlength=n_items)
            m = _row_max(log_t)[:, None]
            T = np.exp(log_t - m)
            total = T.sum(axis=1)
            new_ll = float(np.sum(m[:, 0] + np.log(total)))
            T /= total[:, None]
            # P(knew it | labels), per label: only the true label equal to the given one can be known,
            # so this is the sum over true labels of T * theta * [same] / (like + EPS), bit for bit
            knew = T.ravel().take(iy) * theta.take(a) / (like_table.ravel().take(ayy) + EPS)
            # M
            k_a = np.bincount(a, weights=knew, minlength=n_annotators)
            theta = (k_a + 0.5) / (n_a + 1.0)
            spam = _bincount_onto(spam_index, np.full(n_annotators * K, 0.5), 1.0 - knew).reshape(n_annotators, K)
            xi = spam / spam.sum(axis=1, keepdims=True)
            if abs(new_ll - ll) < tol * max(1.0, abs(new_ll)):
                ll = new_ll
                break
            ll = new_ll
        fit = LabelModelFit(T, theta, it, spam_labels=xi)
        if best is None or ll > best[0]:
            best = (ll, fit)
    assert best is not None
    return best[1]


def bootstrap_reliability(
    fitter,
    items,
    annotators,
    labels,
    n_items: int,
    n_annotators: int,
    n_classes: int,
    *,
    n_boot: int = 100,
    ci: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each annotator's reliability, resampling items with replacement (all
    of an item's labels go together). An annotator absent from a round is not counted in it."""
    i, a, y = _check(items, annotators, labels)
    rng = np.random.default_rng(seed)
    by_item = [np.flatnonzero(i == k) for k in range(n_items)]
    draws = np.full((n_boot, n_annotators), np.nan)
    for b in range(n_boot):
        pick = rng.integers(0, n_items, n_items)
        rows = np.concatenate([by_item[k] for k in pick]) if n_items else np.zeros(0, int)
        new_item = np.repeat(np.arange(n_items), [len(by_item[k]) for k in pick])
        if not len(rows):
            continue
        fit = fitter(new_item, a[rows], y[rows], n_items, n_annotators, n_classes)
        seen = np.bincount(a[rows], minlength=n_annotators) > 0
        draws[b, seen] = fit.reliability[seen]
    alpha = (1 - ci) / 2
    with np.errstate(all="ignore"):
        lo = np.nanquantile(draws, alpha, axis=0)
        hi = np.nanquantile(draws, 1 - alpha, axis=0)
    return lo, hi


@dataclass
class CrowdBTFit:
    theta: np.ndarray  # natural-log strengths, mean zero
    eta: np.ndarray  # per voter: P(the vote follows the Bradley–Terry preference)
    wins: np.ndarray  # (K, K) soft win counts the strengths were fitted on (ties already split)
    iterations: int


def pair_cells(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """The cells of an (n, n) table that votes a vs b add to, for pair_sums: W[a, b] then W[b, a]."""
    return np.concatenate([np.asarray(a) * n + b, np.asarray(b) * n + a])


def pair_sums(cells: np.ndarray, to_first: np.ndarray, n: int) -> np.ndarray:
    """The (n, n) soft win counts of votes a vs b (cells: pair_cells) with `to_first` won by a:
    W[a, b] gets to_first and W[b, a] 1 - to_first. One np.bincount over both passes, in the order of
    np.add.at(W, (a, b), to_first) then np.add.at(W, (b, a), 1 - to_first): the same sums, bit for
    bit (each cell adds its terms one after the other in that order), at a fraction of the time."""
    weights = np.empty(2 * len(to_first))
    weights[: len(to_first)] = to_first
    np.subtract(1.0, to_first, out=weights[len(to_first) :])
    return np.bincount(cells, weights=weights, minlength=n * n).reshape(n, n)


def crowd_bt(
    a,
    b,
    score,
    voters,
    n_systems: int,
    n_voters: int,
    *,
    prior: tuple[float, float] = (9.0, 1.0),
    max_iter: int = 200,
    tol: float = 1e-4,
) -> CrowdBTFit:
    """Crowd-BT by EM. `score`: 1 when a won, 0 when b won, 0.5 for a tie (half a vote each way).
    `prior`: Beta pseudo-counts (agree, reverse) on each eta, Beta(9, 1) by default: a voter is
    presumed careful until their votes say otherwise, which also fixes the sign of the strengths.
    EM converges linearly here; it stops when no strength moves by `tol` (1e-4 in log-strength is
    0.02 Elo points) and no eta by 1e-3."""
    a, b, v = (np.asarray(x, dtype=int) for x in (a, b, voters))
    s = np.asarray(score, dtype=float)
    eta = np.full(n_voters, prior[0] / (prior[0] + prior[1]))
    cells = pair_cells(a, b, n_systems)
    wins0 = pair_sums(cells, s, n_systems)
    theta = fit_bt(wins0)
    it = 0
    W = wins0
    # a million votes: what does not change between steps is computed once, P(a beats b) once
    # per pair of systems (the same numbers as per vote, term by term)
    n_v = np.bincount(v, minlength=n_voters)
    pair = cells[: len(a)]
    # A vote won by a (s = 1) needs only follow_a, one won by b (s = 0) only follow_b: the other
    # term of its sums is 0 * x = 0.0 (x in [0, 1]), and y + 0.0 is y, so each group's soft count
    # and agreement are its one quotient, the very bits of the full expressions. Ties and any
    # other score take the full expressions. The arrays stay in vote order for the sums.
    won, lost = np.flatnonzero(s == 1.0), np.flatnonzero(s == 0.0)
    mixed = np.flatnonzero((s != 1.0) & (s != 0.0))
    groups = [(k, pair[k], v[k]) for k in (won, lost, mixed)]
    s_m = s[mixed]
    to_a, agrees = np.empty(len(s)), np.empty(len(s))
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is reported)
        table = (1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))).ravel()  # P(a beats b) under BT
        for group, (k, pairs, who) in enumerate(groups):
            p, e = table[pairs], eta[who]
            q, reverse = 1 - p, 1 - e
            if group == 0:  # a won: follow_a = the vote for a followed the preference
                e_p = e * p
                to_a[k] = agrees[k] = e_p / (e_p + reverse * q + EPS)
                continue
            e_q = e * q
            follow_b = e_q / (e_q + reverse * p + EPS)
            if group == 1:  # b won
                to_a[k] = 1 - follow_b
                agrees[k] = follow_b
                continue
            e_p = e * p
            follow_a = e_p / (e_p + reverse * q + EPS)
            # soft counts: a vote for a that was a reversal is evidence b is better, and vice versa
            not_s = 1 - s_m
            to_a[k] = s_m * follow_a + not_s * (1 - follow_b)
            agrees[k] = s_m * follow_a + not_s * follow_b
        W = pair_sums(cells, to_a, n_systems)
        agree = np.bincount(v, weights=agrees, minlength=n_voters)
        new_eta = (agree + prior[0] - 1 + 1e-3) / (n_v + prior[0] + prior[1] - 2 + 2e-3)
        new_theta = fit_bt(W)
        # the strengths settle long before the etas of near-perfect voters creep to their limit
        done = np.abs(new_theta - theta).max() < tol and np.abs(new_eta - eta).max() < 1e-3
        eta, theta = new_eta, new_theta
        if done:
            break
    return CrowdBTFit(theta, eta, W, it)


def voter_eprocess(pairs, outcomes, voters, n_voters: int, *, n_outcomes: int | None = None) -> np.ndarray:
    """Each voter's e-process, read at its maximum: the running product over the voter's votes (in
    the order given) of 1 / (K p), rejected once it passes 1/alpha (anytime-valid by Ville's
    inequality, so reading the maximum is the same test as stopping at the first crossing).

    `pairs`: an id of the unordered pair of systems per vote; `outcomes`: an int per vote, coded
    per pair (0 = the first system in name order won, 1 = the second, 2 = tie); p = the share of
    that outcome among the pair's votes by *other* voters, with one pseudo-vote per outcome kind (so
    p > 0 and a voter is not tested against themselves). K = number of outcome kinds (2, or 3 with
    ties), so each factor has mean 1 under the null that the voter votes like the others. As in
    FastChat the shares come from all the other votes, not only the earlier ones: a screen of
    finished data, not a guarantee under optional stopping of the whole study."""
    pr, o, v = (np.asarray(x, dtype=int) for x in (pairs, outcomes, voters))
    K = max(2, int(n_outcomes if n_outcomes is not None else (o.max() + 1 if len(o) else 2)))
    n_pairs = int(pr.max()) + 1 if len(pr) else 0
    if not len(v):
        return np.ones(n_voters)
    # column-wise (a million votes): the pair's outcome counts, each (voter, pair)'s own counts
    totals = np.bincount(pr * K + o, minlength=n_pairs * K).reshape(n_pairs, K).astype(float)
    cell, slot = np.unique(v.astype(np.int64) * n_pairs + pr, return_inverse=True)
    slot = slot.ravel()
    own = np.bincount(slot * K + o, minlength=len(cell) * K).reshape(len(cell), K).astype(float)
    others = totals[pr] - own[slot]
    share = (others[np.arange(len(o)), o] + 1.0) / (others.sum(axis=1) + K)
    step = -np.log(K * share)
    # each voter's running sum in vote order (a stable sort keeps it), summed one vote after the
    # other as the running product's log always was, and read at its maximum (0 before any vote)
    order = np.argsort(v, kind="stable")
    counts = np.bincount(v, minlength=n_voters)
    ends = np.cumsum(counts)
    best = np.zeros(n_voters)
    single = counts == 1
    best[single] = np.maximum(0.0, step[order[ends[single] - 1]])
    for voter in np.flatnonzero(counts > 1):
        running = np.cumsum(step[order[ends[voter] - counts[voter] : ends[voter]]])
        best[voter] = max(0.0, float(running.max()))
    return np.exp(best)


def screen_votes(a, b, score, voters, *, alpha: float, per: str = "study") -> tuple[np.ndarray, float, int]:
    """(e-value per voter, threshold, outcome kinds) for votes a vs b (`score` 1 / 0 / 0.5 for a win
    of a / of b / a tie; `voters` coded 0..n-1). per = "study": each of the n voters tested at
    alpha / n (Bonferroni, valid for e-values), so alpha bounds the chance of flagging anybody who
    votes like the others; "voter": each at alpha, as Chatbot Arena does."""
    a, b, v = (np.asarray(x) for x in (a, b, voters))
    s = np.asarray(score, dtype=float)
    n_voters = int(v.max()) + 1 if len(v) else 0
    level = alpha / max(n_voters, 1) if per == "study" else alpha
    if not len(v):
        return np.zeros(0), 1 / level, 2
    if not (np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer)):
        # names coded by their sorted order, so codes compare as the names do (callers with many
        # votes pass such codes: sorting a million names is most of the screen's time)
        _, codes = np.unique(np.concatenate([a.astype(str), b.astype(str)]), return_inverse=True)
        a, b = codes[: len(a)], codes[len(a) :]
    swap = a > b  # code each pair by its systems in sorted order
    lo, hi = np.where(swap, b, a).astype(np.int64), np.where(swap, a, b).astype(np.int64)
    lo, hi = lo - lo.min(), hi - hi.min()
    _, pair = np.unique(lo * (int(hi.max()) + 1) + hi, return_inverse=True)  # the pair's id: it only groups votes
    first_won = np.where(swap, 1 - s, s)
    outcome = np.where(first_won == 1, 0, np.where(first_won == 0, 1, 2))
    kinds = 3 if (outcome == 2).any() else 2
    e = voter_eprocess(pair.ravel(), outcome, v, n_voters, n_outcomes=kinds)
    return e, 1 / level, kinds
