"""Benchmark: adaptive pair selection + anytime-valid stopping vs uniform allocation + fixed test.

Simulated studies are calibrated to published effect sizes (`calibration`): the 8 PersonaChat
systems of ACUTE-Eval (Li et al. 2019, Table 2, through Bradley–Terry strengths) and the three two-bot
comparisons of Smith et al. (2022), Table 3. Every judgment is a Bernoulli draw with the true win rate.

**Adaptive** (what `dialeval.scheduling.state.AdaptiveState` does): every allowed pair has a beta-binomial
mixture anytime-valid test at alpha / m (Bonferroni over the m pairs) — by default the equal-weight
mixture over Beta(c, c), c = 20, 5, 1.25, 0.3125 (`stats.sequential.mixture_components`;
``mixing="single"`` runs the former Beta(20, 20) rule); a pair is resolved when its
test decides or its order follows from decided pairs by transitivity; the selection rule
(stats/active.py) spends judgments on unresolved pairs only; the study stops when every pair is
resolved (the ranking is decided) or at the budget cap. For speed, judgments are handed out in
batches of max(#candidates, 5% of the judgments so far), the way crowd batches are launched, but
each pair's outcome stream is drawn in advance so its test stops at exactly the judgment where it
crosses (no overshoot inside a pair; the only batching waste is judgments given to a pair in the
round in which it became implied). Streams come from one seed per (study, pair), so the selection
rules are compared on the same judgments (common random numbers).

**Uniform** (the classic design): every allowed pair gets the same n judgments, then a two-sided
exact binomial test per pair at alpha / m; decided pairs + transitivity must give the whole ranking.
Its n is chosen so that its **accuracy** — the share of studies ending with the correct and decided
ranking — matches the adaptive procedure's accuracy: both designs then deliver the same thing with
the same error guarantee, and the only difference is the number of judgments. To be conservative
(in favour of uniform) the target is the *lower* end of the 95% Clopper–Pearson interval of the
adaptive accuracy (with 200 studies all correct: 0.982, not 1). With K > 2 bots the uniform
accuracy curve (accuracy vs n per pair, made non-decreasing) is simulated on a geometric grid of n
and interpolated in log n. With two bots it is exact (binomial power) and the matched n is the
*smallest integer* n whose power reaches the target — the best a planner who knew the win rate
could do (the interpolated grid used before overstated it by 2–9%). Two-bot studies also get the
adaptive rule's exact accuracy and expected judgments by dynamic programming
(`adaptive_accuracy_exact`, `adaptive_judgments_exact`), and, for reference only, the uniform n and
savings at that exact accuracy (`savings_at_exact_accuracy`: literally equal accuracy, far less
conservative than the headline).

`adaptive_judgments` is the mean number of judgments per adaptive study (studies that hit the cap
count the cap; none did in the headline scenario), `uniform_judgments` = m × matched n,
`savings` = 1 − adaptive / uniform. CIs (95%): adaptive mean by bootstrap over studies; uniform
from matching the two ends of the accuracy interval (the upper end capped at min(point estimate,
1 − 0.5/R)); savings from combining the two intervals' ends (conservative). **A/A**: identical
bots; the false-positive rate is the share of studies in which any difference was declared, for
the adaptive rule and for the naive rule (a fixed-size binomial test after every judgment), both
also computed exactly by dynamic programming.

**Baselines beyond the per-pair design** (issue 14): `pooled_bt_accuracy` is the strongest standard
fixed design (the same n per pair, one pooled Bradley–Terry fit, Wald tests at alpha/m,
transitivity), matched to the same accuracy target; uniform allocation over the open pairs with the
same stopping is the `uniform` rule. `paid` counts every judgment handed out in a batch (the
crowd pays the whole batch), `judgments` only those up to each pair's crossing. `crowd=(sd, r)`
simulates annotators with their own win rate (p + N(0, sd)), r consecutive judgments each, and the
annotator-level test; `aa_crowd_rates` gives the A/A rates of both tests with such annotators.

>>> from dialeval.bench.adaptive import run_adaptive_benchmark
>>> out = run_adaptive_benchmark(quick=True)        # seconds; repeats=200 for the full run
>>> sorted(k for k in out if k.endswith("judgments"))
['adaptive_judgments', 'pooled_bt_judgments', 'uniform_judgments']
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps

from ..stats import active
from ..stats.bradley_terry import newton as _newton
from ..stats.sequential import (
    DEFAULT_MIXING,
    DEFAULT_PRIOR,
    block_log_e_process,
    bonferroni_alpha,
    crossing_probability,
    decision_bounds,
    mixture_components,
    naive_bounds,
)
from ..stats.study_design import (
    BATCH_FRACTION,
    Scenario,
    cached_decision_bounds,
    matched_uniform_n,
    simulate_adaptive,
    simulate_adaptive_study,
    two_bot_rate,
    two_bot_uniform_accuracy,
    uniform_accuracy,
    uniform_accuracy_curve,
)
from . import calibration

__all__ = [
    "aa_false_positive_rates",
    "compare_scenario",
    "matched_uniform_n",
    "pooled_bt_accuracy",
    "run_adaptive_benchmark",
    "simulate_adaptive",
    "simulate_adaptive_study",
    "uniform_accuracy",
    "uniform_accuracy_curve",
]


def pooled_bt_accuracy(
    scenario: Scenario, n_per_pair: int, alpha: float = 0.05, reps: int = 4000, seed: int = 0
) -> float:
    """Accuracy of the strongest standard fixed design: n judgments for every allowed pair, one
    Bradley-Terry fit pooling all of them, a Wald test of every strength difference (theta_i -
    theta_j over its standard error from the inverse Fisher information) at alpha/m (Bonferroni
    over the m pairs), decisions closed under transitivity. Simulated with `reps` studies."""
    P = scenario.probs
    K = len(scenario.bots)
    pairs = scenario.allowed
    m = len(pairs)
    rng = np.random.default_rng(seed)
    ii = np.array([i for i, _ in pairs])
    jj = np.array([j for _, j in pairs])
    z_crit = float(sps.norm.isf(bonferroni_alpha(alpha, m) / 2))
    correct = 0
    for start in range(0, reps, 500):
        size = min(500, reps - start)
        wins = rng.binomial(int(n_per_pair), P[ii, jj], size=(size, m)).astype(float)
        W = np.zeros((size, K, K))
        W[:, ii, jj] = wins
        W[:, jj, ii] = n_per_pair - wins
        theta = _newton(W, np.zeros((size, K)), 1e-6)
        N = W + np.transpose(W, (0, 2, 1))
        p = 1.0 / (1.0 + np.exp(-(theta[:, :, None] - theta[:, None, :])))
        w = N * p * (1 - p)
        info = -w
        info[:, np.arange(K), np.arange(K)] += w.sum(axis=2)
        cov = np.linalg.pinv(info)  # the Laplacian's pseudo-inverse: covariance of the contrasts
        var = cov[:, ii, ii] + cov[:, jj, jj] - 2 * cov[:, ii, jj]
        z = (theta[:, ii] - theta[:, jj]) / np.sqrt(np.maximum(var, 1e-300))
        beats = np.zeros((size, K, K), dtype=bool)
        beats[:, ii, jj] = z > z_crit
        beats[:, jj, ii] = z < -z_crit
        closure = beats.copy()
        for k in range(K):
            closure |= closure[:, :, [k]] & closure[:, [k], :]
        resolved = closure | np.transpose(closure, (0, 2, 1))
        decided = resolved[:, ii, jj].all(axis=1)
        wrong = (beats & ~(P > 0.5)[None]).any(axis=(1, 2))
        correct += int((decided & ~wrong).sum())
    return correct / reps


def _matched_fixed_n(accuracy, target: float, target_hi: float, cap: int, reps: int, seed: int):
    """(n, n at the upper target) per pair of a fixed design whose simulated accuracy
    `accuracy(n, reps, seed)` reaches the targets: a geometric grid, made non-decreasing, log-n
    interpolation (as for the per-pair uniform design)."""
    grid = np.unique(np.round(np.geomspace(4, max(64, int(cap)), 40)).astype(int))
    curve = np.maximum.accumulate([accuracy(int(n), reps, seed + 7919 * k) for k, n in enumerate(grid)])
    return (
        matched_uniform_n(grid.tolist(), curve.tolist(), target),
        matched_uniform_n(grid.tolist(), curve.tolist(), target_hi),
    )


def smallest_n_reaching(acc: Sequence[float], target: float) -> int | None:
    """Smallest n (index into `acc`, accuracy at n = 0, 1, ...) with acc[n] >= target; None if none."""
    ok = np.flatnonzero(np.asarray(acc) >= target)
    return int(ok[0]) if ok.size else None


def _ci_prop(x: int, n: int, conf: float = 0.95) -> list[float]:
    """Clopper–Pearson interval."""
    a = 1 - conf
    lo = 0.0 if x == 0 else float(sps.beta.ppf(a / 2, x, n - x + 1))
    hi = 1.0 if x == n else float(sps.beta.ppf(1 - a / 2, x + 1, n - x))
    return [lo, hi]


def compare_scenario(
    scenario: Scenario,
    repeats: int,
    seed: int = 0,
    rule: str = "rank-overlap",
    alpha: float = 0.05,
    prior: float = DEFAULT_PRIOR,
    cap: int = 100_000,
    uniform_reps: int = 4000,
    n_boot: int = 1000,
    workers: int = 1,
    mixing: str = DEFAULT_MIXING,
    pooled_reps: int = 0,
    crowd: tuple[float, int] | None = None,
) -> dict:
    """Adaptive vs matched uniform on one scenario (see the module docstring); with `pooled_reps`
    also against the pooled Bradley-Terry fixed design (`pooled_bt_accuracy`) matched the same way.
    `crowd` = (sd, per_annotator): heterogeneous annotators and the annotator-level test."""
    t0 = time.perf_counter()
    sim = simulate_adaptive(scenario, repeats, seed, rule, alpha, prior, cap, workers, mixing, crowd)
    m = len(scenario.allowed)
    J = sim["judgments"].astype(float)
    C = sim["correct"].astype(bool)
    acc = float(C.mean())
    mean_j = float(J.mean())
    lo_acc, hi_acc = _ci_prop(int(C.sum()), len(C))
    target = lo_acc  # conservative: uniform only has to reach what adaptive is shown to reach
    target_hi = min(hi_acc, acc, 1 - 0.5 / len(C))
    p2 = two_bot_rate(scenario)
    exact: dict = {}
    if p2 is not None:
        # two bots: the uniform design's accuracy is binomial power, exact for every integer n
        uni_acc = two_bot_uniform_accuracy(p2, int(cap), alpha)
        n_uni = smallest_n_reaching(uni_acc, target)
        n_uni_hi = smallest_n_reaching(uni_acc, target_hi)
        # and the adaptive rule's accuracy and mean judgments by dynamic programming
        lo_b, hi_b = cached_decision_bounds(int(cap), float(alpha), float(prior), mixing)
        r = crossing_probability(p2, lo_b, hi_b, int(cap), tol=1e-12)
        acc_exact = r["upper"] if p2 > 0.5 else r["lower"] if p2 < 0.5 else 0.0
        n_eq = smallest_n_reaching(uni_acc, acc_exact)
        exact = {
            "adaptive_accuracy_exact": acc_exact,
            "adaptive_judgments_exact": r["expected_n"],
            "uniform_n_at_exact_accuracy": n_eq,
            "savings_at_exact_accuracy": None if not n_eq else 1 - r["expected_n"] / n_eq,
        }
    else:
        n_hi = max(64, int(cap))
        grid = np.unique(np.round(np.geomspace(4, n_hi, 60)).astype(int))
        curve = uniform_accuracy_curve(scenario, grid, alpha, uniform_reps, seed + 1)
        n_uni = matched_uniform_n(grid, curve, target)
        n_uni_hi = matched_uniform_n(grid, curve, target_hi)
    pooled: dict = {}
    paid = sim["paid"].astype(float)
    if p2 is None and pooled_reps:
        n_bt, n_bt_hi = _matched_fixed_n(
            lambda n, r, sd: pooled_bt_accuracy(scenario, n, alpha, r, sd),
            target,
            target_hi,
            min(int(cap), 40_000),
            pooled_reps,
            seed + 5,
        )
        pooled = {
            "pooled_bt_n_per_pair": n_bt,
            "pooled_bt_judgments": None if n_bt is None else m * n_bt,
            "pooled_bt_judgments_ci": None if n_bt is None else [m * n_bt, m * (n_bt_hi or n_bt)],
            "savings_vs_pooled_bt": None if n_bt is None else 1 - mean_j / (m * n_bt),
            "paid_savings_vs_pooled_bt": None if n_bt is None else 1 - float(paid.mean()) / (m * n_bt),
        }
    rng = np.random.default_rng(seed + 2)
    boot_a = [float(J[rng.integers(0, len(J), len(J))].mean()) for _ in range(n_boot)]
    boot_p = [float(paid[rng.integers(0, len(paid), len(paid))].mean()) for _ in range(n_boot)]
    pct = lambda v: [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] if len(v) else None
    uniform_j = None if n_uni is None else m * n_uni
    uniform_ci = None if n_uni is None else [m * n_uni, m * (n_uni_hi if n_uni_hi is not None else n_uni)]
    ad_ci = pct(boot_a)
    savings_ci = None if uniform_ci is None else [1 - ad_ci[1] / uniform_ci[0], 1 - ad_ci[0] / uniform_ci[1]]
    # the uniform design's accuracy at the adaptive design's mean budget, for comparison
    eq_n = max(1, round(mean_j / m))
    return {
        "scenario": scenario.name,
        "source": scenario.source,
        "bots": scenario.bots,
        "pairs": m,
        "near_null": scenario.near_null,
        "rule": rule,
        "mixing": mixing,
        "test_components": [a for a, _ in mixture_components(prior, mixing)],
        "repeats": repeats,
        "adaptive_accuracy": acc,
        "adaptive_accuracy_ci": _ci_prop(int(C.sum()), len(C)),
        "adaptive_judgments": mean_j,
        "adaptive_judgments_ci": ad_ci,
        "adaptive_judgments_median": float(np.median(J)),
        "adaptive_paid": float(paid.mean()),
        "adaptive_paid_ci": pct(boot_p),
        "paid_savings": None if uniform_j is None else 1 - float(paid.mean()) / uniform_j,
        **pooled,
        "crowd": None
        if crowd is None
        else {
            "annotator_sd": crowd[0],
            "per_annotator": crowd[1],
            "test": "annotator level (one factor per annotator block)",
        },
        "adaptive_capped_share": float(np.mean(J >= cap)),
        "adaptive_wrong_decision_rate": float(np.mean(sim["false_positive"])),
        "matched_accuracy": target,
        "uniform_n_per_pair": n_uni,
        "uniform_judgments": uniform_j,
        "uniform_judgments_ci": uniform_ci,
        "savings": None if uniform_j is None else 1 - mean_j / uniform_j,
        "savings_ci": savings_ci,
        "uniform_accuracy_at_adaptive_budget": uniform_accuracy(scenario, eq_n, alpha, uniform_reps, seed + 3),
        **exact,
        "seconds": time.perf_counter() - t0,
    }


def aa_false_positive_rates(
    repeats: int,
    seed: int = 0,
    alpha: float = 0.05,
    prior: float = DEFAULT_PRIOR,
    n_max: int = 2000,
    K: int = 8,
    k_cap: int | None = None,
    workers: int = 1,
    mixing: str = DEFAULT_MIXING,
) -> dict:
    """A/A false-positive rates. Two identical bots judged up to `n_max` times: the adaptive rule
    (statistic `mixing`; the other statistic exactly too, for contrast) and the naive rule (exact
    binomial test after every judgment), exactly (dynamic programming) and by simulation (`repeats`
    paths). K identical bots under the adaptive procedure up to `k_cap` judgments (default
    28 × n_max / 4), by simulation, with the exact Bonferroni bound m × P(one pair's test crosses
    within k_cap judgments), valid for any allocation; the naive K-bot figure is exact for uniform
    allocation (pairs are independent under A/A)."""
    rng = np.random.default_rng(seed)
    lo, hi = decision_bounds(n_max, alpha, prior, mixing)
    nlo, nhi = naive_bounds(n_max, alpha)
    exact_ad = crossing_probability(0.5, lo, hi)["any"]
    other = "single" if mixing == "mixture" else "mixture"
    exact_other = crossing_probability(0.5, *decision_bounds(n_max, alpha, prior, other))["any"]
    exact_nv = crossing_probability(0.5, nlo, nhi)["any"]
    fp_ad = fp_nv = 0
    ns = np.arange(1, n_max + 1)
    for start in range(0, repeats, 500):
        size = min(500, repeats - start)
        cum = np.cumsum(rng.random((size, n_max)) < 0.5, axis=1)
        fp_ad += int(((cum >= hi[ns]) | (cum <= lo[ns])).any(axis=1).sum())
        fp_nv += int(((cum >= nhi[ns]) | (cum <= nlo[ns])).any(axis=1).sum())
    m = K * (K - 1) // 2
    k_cap = int(k_cap if k_cap is not None else m * n_max // 4)
    k_reps = max(20, repeats // 10)
    simk = simulate_adaptive(
        calibration.aa_scenario(K), k_reps, seed + 11, "variance-reduction", alpha, prior, k_cap, workers, mixing
    )
    lo_k, hi_k = decision_bounds(k_cap, bonferroni_alpha(alpha, m), prior, mixing)
    union_k = m * crossing_probability(0.5, lo_k, hi_k)["any"]
    per_pair_n = k_cap // m
    nlo_k, nhi_k = naive_bounds(per_pair_n, alpha)
    naive_k = 1 - (1 - crossing_probability(0.5, nlo_k, nhi_k)["any"]) ** m
    x_ad, x_nv, x_k = fp_ad, fp_nv, int(simk["any_decision"].sum())
    return {
        "alpha": alpha,
        "two_bots": {
            "n_max": n_max,
            "repeats": repeats,
            "mixing": mixing,
            "adaptive": x_ad / repeats,
            "adaptive_ci": _ci_prop(x_ad, repeats),
            "adaptive_exact": exact_ad,
            f"{other}_exact": exact_other,
            "naive": x_nv / repeats,
            "naive_ci": _ci_prop(x_nv, repeats),
            "naive_exact": exact_nv,
        },
        f"{K}_bots": {
            "cap": k_cap,
            "repeats": k_reps,
            "rule": "variance-reduction",
            "adaptive": x_k / k_reps,
            "adaptive_ci": _ci_prop(x_k, k_reps),
            "adaptive_bonferroni_bound_exact": union_k,
            "naive_uniform_exact": naive_k,
            "naive_per_pair_n": per_pair_n,
        },
    }


def aa_crowd_rates(
    repeats: int = 4000,
    seed: int = 0,
    alpha: float = 0.05,
    n_max: int = 2000,
    sd: float = 0.15,
    per_annotator: Sequence[int] = (5, 10),
    prior: float = DEFAULT_PRIOR,
    mixing: str = DEFAULT_MIXING,
) -> dict:
    """Two identical bots judged by annotators who differ (win rate 0.5 + N(0, sd), clipped;
    `per_annotator` consecutive judgments each), up to `n_max` judgments: false-positive rates of
    the per-judgment test and of the annotator-level test on the same judgments, with 95%
    Clopper-Pearson intervals."""
    out: dict[str, object] = {"sd": sd, "n_max": n_max, "repeats": repeats}
    lo, hi = decision_bounds(n_max, alpha, prior, mixing)
    ns = np.arange(1, n_max + 1)
    for r in per_annotator:
        rng = np.random.default_rng([seed, r])
        fp_j = fp_a = 0
        blocks = n_max // r
        for start in range(0, repeats, 500):
            size = min(500, repeats - start)
            p = np.clip(0.5 + rng.normal(0, sd, (size, blocks)), 0, 1)
            x = rng.random((size, blocks, r)) < p[..., None]
            cum = np.cumsum(x.reshape(size, -1), axis=1)
            fp_j += int(((cum >= hi[ns[: cum.shape[1]]]) | (cum <= lo[ns[: cum.shape[1]]])).any(axis=1).sum())
            log_m = block_log_e_process(x.sum(axis=2), np.full((size, blocks), r), prior, mixing)
            fp_a += int((log_m >= math.log(1 / alpha)).any(axis=1).sum())
        out[f"{r}_per_annotator"] = {
            "per_judgment": fp_j / repeats,
            "per_judgment_ci": _ci_prop(fp_j, repeats),
            "annotator_level": fp_a / repeats,
            "annotator_level_ci": _ci_prop(fp_a, repeats),
        }
    return out


def design_effect(p: float, sd: float, per_annotator: int) -> float:
    """Kish's design effect 1 + (r - 1) rho for r judgments per annotator with intra-annotator
    correlation rho = sd^2 / (p (1 - p)): how many times more judgments a fixed design needs for
    the same precision when annotators differ (an approximation, used to size the fixed baselines)."""
    return 1.0 + (per_annotator - 1) * sd**2 / (p * (1 - p))


def run_adaptive_benchmark(
    repeats: int = 200,
    seed: int = 0,
    quick: bool = False,
    rule: str = "rank-overlap",
    alpha: float = 0.05,
    prior: float = DEFAULT_PRIOR,
    workers: int | None = None,
    all_rules: bool = True,
    mixing: str = DEFAULT_MIXING,
    compare_mixing: bool = True,
) -> dict:
    """Run the whole benchmark and return a JSON-ready dict.

    Top-level numbers are for the headline scenario, the 8 PersonaChat systems of ACUTE-Eval
    (K = 8, 28 pairs) with selection `rule`; `scenarios` holds every scenario (also the two-bot
    studies of Smith et al. 2022, Table 3) and `rules` the PersonaChat comparison of the three selection rules, all with
    the test statistic `mixing` (default: the mixture over Beta(c, c)). With `compare_mixing`,
    `mixing_comparison` repeats every scenario with the other statistic (same seeds, so the same
    judgments) — the former single Beta(prior, prior) rule — against the same uniform baseline.
    `quick=True` shrinks everything to a few seconds (a smoke test, not a measurement).

    Example (what `dialeval bench adaptive --json bench.json` does)::

        import json
        from dialeval.bench.adaptive import run_adaptive_benchmark
        result = run_adaptive_benchmark(repeats=200, seed=0)
        print(result["savings"], result["aa_false_positive_rate"])
        json.dump(result, open("bench.json", "w"), indent=2)
    """
    t0 = time.perf_counter()
    if workers is None:
        workers = 1 if quick else max(1, min(2, os.cpu_count() or 1))
    if quick:
        repeats = min(repeats, 12)
        pc_cap, two_cap, uni_reps, n_boot, aa_reps, aa_n = 40_000, 20_000, 400, 200, 400, 300
        head = calibration.Scenario(
            name="personachat-acute-top4",
            bots=calibration.PERSONACHAT_BOTS[4:],
            probs=calibration.personachat_scenario().probs[4:, 4:],
            source="quick: the top 4 PersonaChat systems of Li et al. 2019, Table 2 (BT strengths)",
        )
        two = [s for s in calibration.paper000_scenarios() if not s.near_null][:2]
        rules = (rule,)
    else:
        pc_cap, two_cap, uni_reps, n_boot, aa_reps, aa_n = 600_000, 40_000, 4000, 1000, 4000, 2000
        head = calibration.personachat_scenario()
        two = calibration.paper000_scenarios()
        rules = tuple(dict.fromkeys([rule, *active.RULES])) if all_rules else (rule,)
    by_rule = {}
    pooled_reps = 200 if quick else 2000
    for r in rules:
        by_rule[r] = compare_scenario(
            head,
            repeats,
            seed,
            r,
            alpha,
            prior,
            pc_cap,
            uni_reps,
            n_boot,
            workers,
            mixing,
            pooled_reps=pooled_reps if r == rule else 0,
        )
    main = by_rule[rule]
    # the same selection rule, allocation uniform over the open pairs, same stopping
    same_stop = by_rule.get("uniform") or compare_scenario(
        head, repeats, seed, "uniform", alpha, prior, pc_cap, uni_reps, n_boot, workers, mixing
    )
    crowd_sd, crowd_r = 0.15, 5
    crowd = compare_scenario(
        head,
        max(repeats // 2, 6),
        seed,
        rule,
        alpha,
        prior,
        pc_cap,
        uni_reps,
        n_boot,
        workers,
        mixing,
        crowd=(crowd_sd, crowd_r),
    )
    de = design_effect(0.5, crowd_sd, crowd_r)
    crowd["design_effect"] = de
    for key in ("uniform_judgments", "pooled_bt_judgments"):
        base = main.get(key)
        crowd[f"{key}_design_effect"] = None if base is None else base * de
        crowd[f"paid_savings_vs_{key.removesuffix('_judgments')}_design_effect"] = (
            None if base is None else 1 - crowd["adaptive_paid"] / (base * de)
        )
    scenarios = [main]
    for s in two:
        scenarios.append(
            compare_scenario(s, repeats, seed, rule, alpha, prior, two_cap, uni_reps, n_boot, workers, mixing)
        )
    comparison = []
    if compare_mixing:
        other = "single" if mixing == "mixture" else "mixture"
        keys = (
            "adaptive_judgments",
            "adaptive_accuracy",
            "uniform_judgments",
            "savings",
            "savings_ci",
            "adaptive_judgments_exact",
            "savings_at_exact_accuracy",
        )
        for sc, base in zip([head, *two], scenarios):
            alt = compare_scenario(
                sc,
                repeats,
                seed,
                rule,
                alpha,
                prior,
                pc_cap if sc is head else two_cap,
                uni_reps,
                n_boot,
                workers,
                other,
            )
            comparison.append(
                {"scenario": sc.name, mixing: {k: base.get(k) for k in keys}, other: {k: alt.get(k) for k in keys}}
            )
    aa = aa_false_positive_rates(aa_reps, seed, alpha, prior, aa_n, K=len(head.bots), workers=workers, mixing=mixing)
    aa["crowd"] = aa_crowd_rates(aa_reps, seed, alpha, aa_n, prior=prior, mixing=mixing)
    decidable = [s for s in scenarios[1:] if not s["near_null"] and s["uniform_judgments"]]
    out = {
        "benchmark": "adaptive collection",
        "headline_scenario": head.name,
        "uniform_judgments": main["uniform_judgments"],
        "uniform_judgments_ci": main["uniform_judgments_ci"],
        "adaptive_judgments": main["adaptive_judgments"],
        "adaptive_judgments_ci": main["adaptive_judgments_ci"],
        "savings": main["savings"],
        "savings_ci": main["savings_ci"],
        "adaptive_paid": main["adaptive_paid"],
        "adaptive_paid_ci": main["adaptive_paid_ci"],
        "paid_savings": main["paid_savings"],
        "pooled_bt_judgments": main.get("pooled_bt_judgments"),
        "pooled_bt_judgments_ci": main.get("pooled_bt_judgments_ci"),
        "paid_savings_vs_pooled_bt": main.get("paid_savings_vs_pooled_bt"),
        "uniform_same_stopping_paid": same_stop["adaptive_paid"],
        "paid_savings_vs_uniform_same_stopping": 1 - main["adaptive_paid"] / same_stop["adaptive_paid"],
        "crowd": crowd,
        "accuracy": main["adaptive_accuracy"],
        "accuracy_ci": main["adaptive_accuracy_ci"],
        "aa_false_positive_rate": aa["two_bots"]["adaptive"],
        "aa_false_positive_rate_ci": aa["two_bots"]["adaptive_ci"],
        "naive_aa_false_positive_rate": aa["two_bots"]["naive"],
        "naive_aa_false_positive_rate_ci": aa["two_bots"]["naive_ci"],
        "aa": aa,
        "two_bot_savings_mean": float(np.mean([s["savings"] for s in decidable])) if decidable else None,
        "rules": {
            r: {
                k: v[k]
                for k in (
                    "adaptive_judgments",
                    "adaptive_judgments_ci",
                    "adaptive_accuracy",
                    "uniform_judgments",
                    "savings",
                    "savings_ci",
                )
            }
            for r, v in by_rule.items()
        },
        "scenarios": scenarios,
        "mixing_comparison": comparison,
        "settings": {
            "repeats": repeats,
            "seed": seed,
            "quick": quick,
            "rule": rule,
            "alpha": alpha,
            "family_wise": "Bonferroni over the allowed pairs",
            "mixing": mixing,
            "prior": " + ".join(f"Beta({a:g}, {b:g})" for a, b in mixture_components(prior, mixing))
            + (" (equal-weight mixture)" if mixing == "mixture" else ""),
            "batch_fraction": BATCH_FRACTION,
            "cap_k_bots": pc_cap,
            "cap_two_bots": two_cap,
            "uniform_reps_per_n": uni_reps,
            "bootstrap": n_boot,
            "workers": workers,
            "uniform_test": (
                "exact two-sided binomial at alpha/m per pair after n judgments each; transitivity; "
                "n matched to the lower 95% bound of the adaptive accuracy (two bots: exact power, "
                "smallest integer n; K bots: simulated grid, log-n interpolation)"
            ),
            "accuracy": "share of studies ending with every allowed pair resolved and no decision against the truth",
        },
        "seconds": time.perf_counter() - t0,
    }
    return out
