"""Paired-comparison models that treat a tie as its own outcome, fitted on aggregated counts.

Chatbot Arena counts a tie as half a win for each side (``"half"``, stats/bradley_terry.py). Two
classic models instead give a tie its own probability and one tie parameter for the whole board:

- **Davidson** (Davidson 1970, "On extending the Bradley-Terry model to accommodate ties in
  paired comparison experiments", JASA 65(329)): with strengths pi = exp(theta),
  P(i beats j) = pi_i / Z, P(tie) = nu * sqrt(pi_i pi_j) / Z, Z = pi_i + pi_j + nu sqrt(pi_i pi_j).
  In terms of d = theta_i - theta_j: the three outcomes have weights exp(d/2), exp(-d/2) and nu.
  Given that a vote is decisive, P(i beats j) = sigmoid(d): the Bradley–Terry scale.
- **Rao–Kupper** (Rao & Kupper 1967, "Ties in paired-comparison experiments: a generalization of the
  Bradley-Terry model", JASA 62(317)): P(i beats j) = sigmoid(d - eta), P(j beats i) =
  sigmoid(-d - eta), P(tie) = the rest, eta = log(theta_RK) >= 0 (a threshold of discrimination).

Both are fitted by maximum likelihood (scipy's L-BFGS with analytic gradients) on the K x K counts
W (W[i, j] = votes i won against j) and T (symmetric tie counts), so the work is O(K^2) per
iteration whatever the number of votes. ``"ignore"`` drops the ties and fits plain Bradley–Terry.
Written here because no kept Python library fits Davidson or Rao–Kupper on aggregated counts
(``choix`` has neither; arena-rank has no tie model and pins old numpy).

Intervals for these fits come from the observed information (Wald): ``covariance`` is its
pseudo-inverse on the mean-zero strengths; `simulate_ratings` draws from that normal for rating
and rank intervals. This module imports nothing from dialeval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.special import expit, logsumexp

__all__ = ["TIE_MODELS", "TieFit", "fit_tie_model", "predicted_tie_rates", "simulate_ratings"]

TieModel = Literal["half", "ignore", "davidson", "rao-kupper"]
TIE_MODELS: tuple[str, ...] = ("half", "ignore", "davidson", "rao-kupper")


@dataclass
class TieFit:
    """A fitted model: mean-zero log-strengths `theta`, the tie parameter (Davidson's nu,
    Rao–Kupper's theta_RK = exp(eta); None for "half"/"ignore"), the log-likelihood of the counts
    it was fitted on, and the covariance of theta (Wald)."""

    model: str
    theta: np.ndarray
    tie_parameter: float | None
    log_likelihood: float
    covariance: np.ndarray = field(repr=False)
    votes: int = 0


def _pairs(K: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(K, k=1)


def _davidson_terms(d: np.ndarray, log_nu: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log P(win), log P(loss), log P(tie) for differences d."""
    stack = np.stack([d / 2.0, -d / 2.0, np.full_like(d, log_nu)])
    log_z = logsumexp(stack, axis=0)
    return d / 2.0 - log_z, -d / 2.0 - log_z, log_nu - log_z


def _rk_terms(d: np.ndarray, eta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p_win = expit(d - eta)
    p_loss = expit(-d - eta)
    p_tie = np.clip(1.0 - p_win - p_loss, 1e-300, 1.0)
    return np.log(np.clip(p_win, 1e-300, 1.0)), np.log(np.clip(p_loss, 1e-300, 1.0)), np.log(p_tie)


def _negloglik(params: np.ndarray, model: str, i: np.ndarray, j: np.ndarray, w_ij, w_ji, t_ij, l2: float):
    K = params.size - 1
    theta, tie = params[:K], params[K]
    d = theta[i] - theta[j]
    if model == "davidson":
        lw, ll, lt = _davidson_terms(d, tie)
        z = np.exp(lw), np.exp(ll), np.exp(lt)
        # d/dd log P: win 1/2 - (p_w - p_l)/2, loss -1/2 - (p_w - p_l)/2, tie -(p_w - p_l)/2
        half_diff = (z[0] - z[1]) / 2.0
        g_d = w_ij * (0.5 - half_diff) + w_ji * (-0.5 - half_diff) + t_ij * (-half_diff)
        g_tie = float(np.sum(t_ij * (1.0 - z[2]) - (w_ij + w_ji) * z[2]))
    else:  # rao-kupper, tie = log(eta) so that eta > 0
        eta = math.exp(tie)
        lw, ll, lt = _rk_terms(d, eta)
        s_w, s_l = expit(d - eta), expit(-d - eta)
        ds_w, ds_l = s_w * (1 - s_w), s_l * (1 - s_l)
        p_tie = np.exp(lt)
        g_d = w_ij * (1 - s_w) - w_ji * (1 - s_l) + t_ij * (-ds_w + ds_l) / p_tie
        g_eta = np.sum(-w_ij * (1 - s_w) - w_ji * (1 - s_l) + t_ij * (ds_w + ds_l) / p_tie)
        g_tie = float(g_eta * eta)
    value = -float(np.sum(w_ij * lw + w_ji * ll + t_ij * lt)) + 0.5 * l2 * float(theta @ theta)
    grad_theta = np.zeros(K)
    np.add.at(grad_theta, i, g_d)
    np.add.at(grad_theta, j, -g_d)
    grad = np.concatenate([-grad_theta + l2 * theta, [-g_tie]])
    return value, grad


def _numeric_hessian(fun, x: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    """Hessian by central differences of the analytic gradient (K+1 gradient pairs, each O(K^2))."""
    n = x.size
    H = np.empty((n, n))
    for k in range(n):
        step = np.zeros(n)
        step[k] = eps
        H[:, k] = (fun(x + step)[1] - fun(x - step)[1]) / (2 * eps)
    return (H + H.T) / 2.0


def _half_fit(W: np.ndarray, T: np.ndarray, l2: float) -> TieFit:
    from .bradley_terry import fit_bt, sandwich_cov

    theta = fit_bt(W, T, l2)
    p = expit(theta[:, None] - theta[None, :])
    Wh = W + 0.5 * T
    ll = float(np.sum(np.triu(Wh * np.log(p) + Wh.T * np.log(p.T), 1)))
    return TieFit("half", theta, None, ll, sandwich_cov(W, T, theta), int(round(W.sum() + np.triu(T, 1).sum())))


def fit_tie_model(wins: np.ndarray, ties: np.ndarray | None, model: str = "half", l2: float = 1e-6) -> TieFit:
    """Fit `model` ("half", "ignore", "davidson", "rao-kupper") to aggregated counts.

    `wins[i, j]` = decisive votes i won against j; `ties` symmetric (each tie once per ordered pair,
    as stats.bradley_terry.aggregate_votes builds it).

    >>> W = np.array([[0, 30, 40], [20, 0, 30], [10, 20, 0]], float)
    >>> T = np.array([[0, 10, 10], [10, 0, 10], [10, 10, 0]], float)
    >>> fit = fit_tie_model(W, T, "davidson")
    >>> bool(fit.theta[0] > fit.theta[1] > fit.theta[2]), round(fit.tie_parameter, 2)
    (True, 0.43)
    """
    W = np.asarray(wins, dtype=float)
    T = np.zeros_like(W) if ties is None else np.asarray(ties, dtype=float)
    K = W.shape[0]
    if model == "half":
        return _half_fit(W, T, l2)
    if model == "ignore":
        fit = _half_fit(W, np.zeros_like(W), l2)
        fit.model = "ignore"
        return fit
    if model not in ("davidson", "rao-kupper"):
        raise ValueError(f"unknown tie model {model!r}; choose one of {', '.join(TIE_MODELS)}")
    i, j = _pairs(K)
    w_ij, w_ji, t_ij = W[i, j], W[j, i], T[i, j]
    n_votes = float(w_ij.sum() + w_ji.sum() + t_ij.sum())
    from .bradley_terry import fit_bt, one_blas_thread

    theta0 = fit_bt(W, T, l2)
    tie_share = t_ij.sum() / max(n_votes, 1.0)
    if model == "davidson":  # at d = 0 the tie share is nu / (2 + nu)
        start_tie = math.log(max(2 * tie_share / max(1 - tie_share, 1e-9), 1e-6))
    else:  # at d = 0 the tie share is 1 - 2 sigmoid(-eta)
        start_tie = math.log(max(math.log((1 + tie_share) / max(1 - tie_share, 1e-9)), 1e-6))
    x0 = np.concatenate([theta0, [start_tie]])
    args = (model, i, j, w_ij, w_ji, t_ij, l2)
    from scipy.optimize import minimize  # 0.5-1 s to import: only when there are ties to fit

    # L-BFGS-B's tiny BLAS calls with OpenBLAS's threads awake cost 60-80 ms a fit; 3-7 ms in one thread
    with one_blas_thread():
        result = minimize(
            _negloglik, x0, args=args, jac=True, method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-9}
        )
        x = result.x
        theta = x[:K] - x[:K].mean()
        x = np.concatenate([theta, [x[K]]])
        H = _numeric_hessian(lambda z: _negloglik(z, *args), x)
        cov_full = np.linalg.pinv(H)
        centre = np.eye(K) - 1.0 / K  # the strengths are reported mean-zero
        cov = centre @ cov_full[:K, :K] @ centre
    ll = -_negloglik(x, *args)[0] + 0.5 * l2 * float(theta @ theta)
    tie_parameter = math.exp(x[K]) if model == "davidson" else math.exp(math.exp(x[K]))
    return TieFit(model, theta, tie_parameter, ll, cov, int(round(n_votes)))


def predicted_tie_rates(fit: TieFit) -> np.ndarray | None:
    """The model's tie probability for every pair (K x K), None for models without one."""
    if fit.tie_parameter is None:
        return None
    d = fit.theta[:, None] - fit.theta[None, :]
    if fit.model == "davidson":
        return np.exp(_davidson_terms(d, math.log(fit.tie_parameter))[2])
    return np.exp(_rk_terms(d, math.log(fit.tie_parameter))[2])


def simulate_ratings(fit: TieFit, n: int = 1000, seed: int | None = 0) -> np.ndarray:
    """Draws (n, K) of the mean-zero log-strengths from the normal N(theta, covariance), for rating
    and rank intervals of a fit without a bootstrap."""
    rng = np.random.default_rng(seed)
    K = fit.theta.size
    vals, vecs = np.linalg.eigh((fit.covariance + fit.covariance.T) / 2.0)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    return fit.theta[None, :] + rng.standard_normal((n, K)) @ root.T
