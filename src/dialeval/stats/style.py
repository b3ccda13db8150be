"""Substance or style? Bradley–Terry with style covariates, and AlpacaEval's length-controlled win rate.

People (and LLM judges) prefer longer, more formatted answers. Chatbot Arena's *style control*
(LMArena blog, "Does style matter?", August 2024; arena-rank's contextual Bradley–Terry) adds to the
Bradley–Terry logit the differences in answer length and Markdown elements of the two answers:

    logit P(a beats b) = theta_a - theta_b + beta . z_ab

so theta is the strength "at equal style" and beta says how much each style feature buys. Features
(`style_features`), per answer: length in **words** (whitespace-separated; no tokenizer needed, so
the counts are reproducible without a model's vocabulary), and the counts of Markdown headers, bold
spans, list items and fenced code blocks. Like Arena, each covariate is the *normalised* difference
(f_a - f_b) / (f_a + f_b) (0 when both are 0), then standardised over the votes.

Ties count half (each tie is half a win for each side), as in the plain board. The fit is Newton on
the per-vote log-likelihood with the model block of the Hessian accumulated per pair (bincount), so
one iteration costs O(votes x features^2 + K^3): a million votes take seconds. Intervals: the robust
(sandwich) covariance over votes, as `stats.bradley_terry.sandwich_cov` does for the plain board.

For a baseline design (every system against one baseline on the same prompts), `length_controlled`
is the length-controlled win rate of Dubois, Galambosi, Liang & Hashimoto (2024, "Length-controlled
AlpacaEval", arXiv:2404.04475) without its instruction-difficulty term: per system a logistic
regression of "beats the baseline" on an intercept and tanh(standardised length difference); the
controlled win rate is the model's prediction with the length term set to zero.

Written here because no kept library fits a Bradley–Terry model with covariates on a million votes
(arena-rank does, but pins old numpy and pulls jax; it is our cross-check in benchmarks/).
This module imports nothing from dialeval outside stats/.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .bradley_terry import one_blas_thread

__all__ = ["STYLE_FEATURES", "StyleFit", "fit_style_bt", "length_controlled", "style_covariates", "style_features"]

STYLE_FEATURES = ("length", "headers", "bold", "lists", "code_blocks")

_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S", re.M)
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\S", re.M)
_FENCE = re.compile(r"^\s{0,3}(```|~~~)", re.M)


def style_features(text: str | None) -> tuple[int, int, int, int, int]:
    """(words, headers, bold spans, list items, fenced code blocks) of one answer.

    >>> style_features("## Plan\\n- **one** thing\\n- two\\n```\\ncode\\n```")
    (10, 1, 1, 2, 1)
    """
    text = text or ""
    return (
        len(text.split()),
        len(_HEADER.findall(text)),
        len(_BOLD.findall(text)),
        len(_LIST.findall(text)),
        len(_FENCE.findall(text)) // 2,
    )


def style_covariates(features_a: np.ndarray, features_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(z, mean, sd): normalised differences (f_a - f_b)/(f_a + f_b), standardised per column
    (a column with no spread is left at 0)."""
    fa = np.asarray(features_a, dtype=float)
    fb = np.asarray(features_b, dtype=float)
    total = fa + fb
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.where(total > 0, (fa - fb) / np.where(total > 0, total, 1.0), 0.0)
    mean = diff.mean(axis=0)
    sd = diff.std(axis=0)
    z = np.where(sd > 0, (diff - mean) / np.where(sd > 0, sd, 1.0), 0.0)
    return z, mean, sd


@dataclass
class StyleFit:
    theta: np.ndarray  # mean-zero log-strengths at equal style
    beta: np.ndarray  # per standardised style covariate
    theta_se: np.ndarray
    beta_se: np.ndarray
    covariance: np.ndarray  # of (theta, beta), robust
    iterations: int


def fit_style_bt(
    a: np.ndarray,
    b: np.ndarray,
    score: np.ndarray,
    z: np.ndarray,
    n_models: int,
    *,
    l2: float = 1e-6,
    tol: float = 1e-9,
    max_iter: int = 50,
) -> StyleFit:
    """Fit theta (n_models) and beta (z's columns) to votes: model indices `a`, `b`, `score` = 1
    (a won), 0 (b won) or 0.5 (tie), covariates `z` (votes x features)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    y = np.asarray(score, dtype=float)
    Z = np.asarray(z, dtype=float).reshape(len(y), -1)
    K, S = n_models, Z.shape[1]
    theta = np.zeros(K)
    beta = np.zeros(S)
    pair = a * K + b
    iterations = 0
    with one_blas_thread():
        for it in range(1, max_iter + 1):
            iterations = it
            eta = theta[a] - theta[b] + Z @ beta
            p = 1.0 / (1.0 + np.exp(-eta))
            r = y - p
            w = p * (1.0 - p)
            g_theta = np.bincount(a, r, K) - np.bincount(b, r, K) - l2 * theta
            g_beta = Z.T @ r - l2 * beta
            H = _information(a, b, pair, w, Z, K) + l2 * np.eye(K + S)
            step = np.linalg.solve(H + 1e-12 * np.eye(K + S), np.concatenate([g_theta, g_beta]))
            theta += step[:K]
            beta += step[K:]
            centred = step[:K] - step[:K].mean()
            if max(np.abs(centred).max(initial=0.0), np.abs(step[K:]).max(initial=0.0)) < tol:
                break
        theta -= theta.mean()
        eta = theta[a] - theta[b] + Z @ beta
        p = 1.0 / (1.0 + np.exp(-eta))
        w = p * (1.0 - p)
        H = _information(a, b, pair, w, Z, K)
        # meat: sum over votes of the outer product of each vote's score (y - p) x_v
        r = y - p
        M = _information(a, b, pair, r * r, Z, K)
        Hp = np.linalg.pinv(H)
        cov = Hp @ M @ Hp
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return StyleFit(theta, beta, se[:K], se[K:], cov, iterations)


def _information(a, b, pair, w, Z, K) -> np.ndarray:
    """sum_v w_v x_v x_v^T with x_v = (e_a - e_b, z_v), assembled blockwise without the dense
    votes x K design."""
    S = Z.shape[1]
    H = np.zeros((K + S, K + S))
    per_pair = np.bincount(pair, w, K * K).reshape(K, K)
    sym = per_pair + per_pair.T
    H[:K, :K] = np.diag(sym.sum(axis=1)) - sym
    wz = Z * w[:, None]
    cross = np.zeros((K, S))
    for s in range(S):
        cross[:, s] = np.bincount(a, wz[:, s], K) - np.bincount(b, wz[:, s], K)
    H[:K, K:] = cross
    H[K:, :K] = cross.T
    H[K:, K:] = Z.T @ wz
    return H


def length_controlled(
    system_wins: np.ndarray, length_system: np.ndarray, length_baseline: np.ndarray
) -> dict[str, float | int | None]:
    """AlpacaEval-style length-controlled win rate of one system against the baseline.

    `system_wins`: 1 (system won), 0 (baseline won), 0.5 (tie) per item; the two answers' lengths.
    Returns {"win_rate", "lc_win_rate", "length_coef", "n"} (rates in [0, 1]).
    """
    y = np.asarray(system_wins, dtype=float)
    n = len(y)
    if n == 0:
        return {"win_rate": None, "lc_win_rate": None, "length_coef": None, "n": 0}
    diff = np.asarray(length_system, float) - np.asarray(length_baseline, float)
    sd = diff.std()
    x = np.tanh(diff / sd) if sd > 0 else np.zeros(n)
    X = np.column_stack([np.ones(n), x])
    coef = np.zeros(2)
    for _ in range(100):  # Newton on the (weighted, ties half) logistic likelihood, small ridge
        p = 1.0 / (1.0 + np.exp(-(X @ coef)))
        g = X.T @ (y - p) - 1e-6 * coef
        H = (X * (p * (1 - p))[:, None]).T @ X + 1e-6 * np.eye(2)
        step = np.linalg.solve(H, g)
        coef += step
        if np.abs(step).max() < 1e-10:
            break
    return {
        "win_rate": float(y.mean()),
        "lc_win_rate": float(1.0 / (1.0 + math.exp(-coef[0]))),
        "length_coef": float(coef[1]),
        "n": n,
    }


def names_index(names: Sequence[str]) -> dict[str, int]:
    return {name: k for k, name in enumerate(names)}
