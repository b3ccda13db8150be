"""Benchmark: judge-corrected intervals (stats/ppi.py) on real Arena battles judged by people and LLMs.

Data: ``../shared/data/arena-judges`` (Chatzi et al. 2024): 26,919 Chatbot Arena battles among 20
models with the crowd's vote and the verdicts of three LLM judges on the same battles, read with
the project's Arena importer (formats/arena.py). Scores are the first model's: win 1, tie ½, loss 0
("tie (bothbad)" is a tie).

**Resampling.** For each n in ``N_GRID`` and each repetition, n battles are drawn without replacement:
their human votes are "collected"; the judge's verdicts are used on all 26,919 battles (the n
labelled ones and the N = 26,919 − n others). The same draws serve every method (common random
numbers). Methods: *human only* (λ = 0: the classical estimates with the sandwich covariance) and
PPI++ with each judge (λ tuned per study; per pair for win rates).

**Truth** is the estimate from all 26,919 human votes: each pair's win rate, and the Bradley–Terry
log-strengths fitted on every vote. The intervals target the population the battles are drawn from,
of which the 26,919 are a sample, so at large n (n/26,919 = 37% at n = 10,000) they are somewhat
conservative for this finite-population truth; both methods alike.

**Quantities.** BT: coverage of each model's 95% interval (20 per study) and of each pairwise
difference (190), mean width on the Elo scale (400/ln 10 per unit of θ); rank sets from simultaneous
intervals (stats.ppi.rank_sets): how often *every* true rank is in its set, and the mean set size.
Win rates: the 10 pairs with ≥ 300 battles, at n ≥ 2,000 only (below, such a pair has < 22 human votes
on average, too few for any CLT interval). **Savings**: the human-only mean width w_H(n) is
interpolated in log n–log w over the grid (extrapolated with slope −½, the 1/sqrt(n) law, beyond it);
n_H is the number of human votes at which people alone get the width PPI++ gets with n;
savings = 1 − n/n_H. Coverage CIs are the mean ± 1.96 standard errors over repetitions (a study's
coverage share is one observation, so correlation within a study is accounted for).

**Simulated crowd.** A Bradley–Terry world with the 20 models' strengths and the tie share of the
full human fit, battles of the Arena pairs in their Arena proportions; a synthetic judge copies the
person's vote with probability ρ and otherwise votes independently from the same law, so its vote
correlates ρ with the person's (ρ = 0.75). The judge labels ``SIM_POOL`` = 100,000 battles (judge
labels are cheap; the gain is ρ²/(1 + n/N), so a pool of 26,919 would cap it at 35% at n = 10,000).
Truth there is the true estimand (the logistic fit to the expected scores).

>>> from dialeval.bench.judges import run_judges_benchmark
>>> out = run_judges_benchmark(quick=True)          # seconds; the default run takes a few minutes
>>> sorted(out["judges"])
['Claude-3-Opus', 'GPT-3.5', 'GPT-4', 'human only']
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..stats import ppi

__all__ = ["ArenaJudgeData", "load_arena_judges", "run_judges_benchmark", "savings_at_equal_width"]

JUDGE_FILES = {
    "GPT-4": "gpt-4-0125-preview.jsonl",
    "Claude-3-Opus": "claude-3-opus-20240229.jsonl",
    "GPT-3.5": "gpt-3.5-turbo.jsonl",
}
N_GRID = (500, 1000, 2000, 5000, 10000)
WIN_RATE_MIN_N = 2000
WIN_RATE_MIN_BATTLES = 300
SIM_RHO = 0.75
SIM_POOL = 100_000
ELO = 400.0 / math.log(10.0)
# BT scores, BT differences, rank sets, per-pair win rates, each model's win rate against the field
QUANTITIES = ("bt", "bt_diff", "rank_sets", "win_rate", "field")


def default_data_dir() -> Path:
    """$DIALEVAL_SHARED_DATA/arena-judges, else ``../shared/data/arena-judges`` from the current folder
    (where the README's commands run), else beside this source checkout."""
    import os

    env = os.environ.get("DIALEVAL_SHARED_DATA")
    if env:
        return Path(env) / "arena-judges"
    here = Path("..") / "shared" / "data" / "arena-judges"
    if here.exists():
        return here
    return Path(__file__).resolve().parents[3].parent / "shared" / "data" / "arena-judges"


@dataclass
class ArenaJudgeData:
    names: list[str]
    a: np.ndarray  # bot index of model_a per battle
    b: np.ndarray
    human: np.ndarray  # score of model_a
    judges: dict[str, np.ndarray]


def load_arena_judges(folder: str | Path | None = None) -> ArenaJudgeData:
    """The battles, the crowd's scores and each judge's scores, read with formats.arena."""
    from ..formats.arena import read_arena_battles

    folder = Path(folder) if folder is not None else default_data_dir()
    files = {label: folder / name for label, name in JUDGE_FILES.items()}
    dataset = read_arena_battles(folder / "human.jsonl", judge_files=list(files.values()))
    stem_to_label = {path.stem: label for label, path in files.items()}
    order: dict[str, int] = {}
    a_names: list[str] = []
    b_names: list[str] = []
    human: list[str] = []
    verdicts: dict[str, dict[str, str]] = {label: {} for label in files}
    for j in dataset.judgments:
        battle = str(j.meta["battle"])
        label = stem_to_label.get(j.annotator_id)
        if label is None:  # the crowd
            order[battle] = len(order)
            a_names.append(j.value["model_a"])
            b_names.append(j.value["model_b"])
            human.append(j.value["winner"])
        else:
            verdicts[label][battle] = j.value["winner"]
    names = sorted(set(a_names) | set(b_names))
    idx = {x: k for k, x in enumerate(names)}
    battles = list(order)
    judges = {label: ppi.score_of_winner([v[bt] for bt in battles]) for label, v in verdicts.items()}
    return ArenaJudgeData(
        names=names,
        a=np.asarray([idx[x] for x in a_names]),
        b=np.asarray([idx[x] for x in b_names]),
        human=ppi.score_of_winner(human),
        judges=judges,
    )


def savings_at_equal_width(grid: list[int], human_width: list[float], n: int, width: float) -> float:
    """1 − n / n_H, n_H the human-only votes giving `width` (log–log interpolation of the human-only
    widths over `grid`; beyond it, the 1/sqrt(n) law from the nearest end)."""
    lg, lw = np.log(np.asarray(grid, float)), np.log(np.asarray(human_width, float))
    target = math.log(width)
    if target >= lw[0]:  # wider than people alone with the smallest n
        log_nh = lg[0] - 2.0 * (target - lw[0])
    elif target <= lw[-1]:
        log_nh = lg[-1] - 2.0 * (target - lw[-1])
    else:  # widths fall with n: interpolate n in w
        log_nh = float(np.interp(target, lw[::-1], lg[::-1]))
    return 1.0 - n / math.exp(log_nh)


class _Acc:
    """Running per-study means of a coverage share and a width."""

    def __init__(self) -> None:
        self.cov: list[float] = []
        self.width: list[float] = []

    def add(self, hits: np.ndarray, widths: np.ndarray) -> None:
        if len(hits):
            self.cov.append(float(np.mean(hits)))
            self.width.append(float(np.mean(widths)))

    def summary(self) -> dict[str, Any]:
        if not self.cov:
            return {"coverage": None, "coverage_ci": None, "mean_width": None, "studies": 0}
        c = np.asarray(self.cov)
        half = 1.96 * c.std(ddof=1) / math.sqrt(len(c)) if len(c) > 1 else float("nan")
        return {
            "coverage": float(c.mean()),
            "coverage_ci": [float(c.mean() - half), float(c.mean() + half)],
            "mean_width": float(np.mean(self.width)),
            "studies": len(c),
        }


def _true_ranks(theta: np.ndarray) -> np.ndarray:
    ranks = np.empty(len(theta), dtype=int)
    ranks[np.argsort(-theta)] = np.arange(1, len(theta) + 1)
    return ranks


def _score_bt(res: ppi.BTResult, truth: np.ndarray, accs: dict[str, _Acc]) -> None:
    lo, hi = res.intervals()
    half = (hi - lo) / 2
    accs["bt"].add(np.abs(res.theta - truth) <= half, 2 * half * ELO)
    d, _, dhalf = res.differences()
    iu = np.triu_indices(len(truth), 1)
    true_d = (truth[:, None] - truth[None, :])[iu]
    accs["bt_diff"].add(np.abs(d[iu] - true_d) <= dhalf[iu], 2 * dhalf[iu] * ELO)
    sets = np.asarray(res.rank_sets())
    ranks = _true_ranks(truth)
    inside = (sets[:, 0] <= ranks) & (ranks <= sets[:, 1])
    accs["rank_sets"].add(np.asarray([inside.all()]), np.asarray([np.mean(sets[:, 1] - sets[:, 0] + 1)]))


def _score_rates(rates: ppi.MeanResult, keep: np.ndarray, truth: np.ndarray, acc: _Acc) -> None:
    ok = keep & ~np.isnan(rates.estimate)
    acc.add((rates.ci_low[ok] <= truth[ok]) & (truth[ok] <= rates.ci_high[ok]), (rates.ci_high - rates.ci_low)[ok])


def _moments_fast(
    K: int, a: np.ndarray, b: np.ndarray, y: np.ndarray, yh: np.ndarray, lab: np.ndarray, total: ppi.PairMoments
) -> ppi.PairMoments:
    """Labelled moments from the drawn battles; the judge-only ones = all battles' judge sums − labelled."""
    m = ppi.pair_moments(K, a[lab], b[lab], y[lab], yh[lab])
    m.N = total.n - m.n
    m.uh = total.sh - m.sh
    m.uhh = total.shh - m.shh
    return m


def _run_grid(
    K: int,
    a: np.ndarray,
    b: np.ndarray,
    human_draw,
    judge_scores: dict[str, np.ndarray],
    truth_theta: np.ndarray,
    truth_rates: np.ndarray | None,
    rate_pairs: np.ndarray | None,
    truth_field: np.ndarray,
    grid: tuple[int, ...],
    repeats: int,
    rng: np.random.Generator,
    pool: int,
) -> dict[str, dict]:
    """For each n: `repeats` studies; per method the BT / difference / rank-set / win-rate summaries.

    `human_draw(rng)` returns (human scores, judges' scores dict) for the `pool` battles of one study:
    fixed arrays for the real data, a fresh draw for the simulated crowd."""
    methods = ["human only", *judge_scores]
    out: dict[str, dict] = {m: {} for m in methods}
    for n in grid:
        accs = {m: {k: _Acc() for k in QUANTITIES} for m in methods}
        lams: dict[str, list[float]] = {m: [] for m in judge_scores}
        for _ in range(repeats):
            y, judged = human_draw(rng)
            lab = np.zeros(pool, dtype=bool)
            lab[rng.choice(pool, size=n, replace=False)] = True
            human_m = ppi.pair_moments(K, a[lab], b[lab], y[lab], y[lab])
            res = ppi.ppi_bradley_terry(human_m, lam=0)
            _score_bt(res, truth_theta, accs["human only"])
            keep = np.ones(K, dtype=bool)
            _score_rates(ppi.ppi_model_win_rates(human_m, lam=0), keep, truth_field, accs["human only"]["field"])
            if truth_rates is not None and rate_pairs is not None and n >= WIN_RATE_MIN_N:
                _score_rates(ppi.ppi_win_rates(human_m, lam=0), rate_pairs, truth_rates, accs["human only"]["win_rate"])
            for label, yh in judged.items():
                total = ppi.pair_moments(K, a, b, yh, yh)
                m = _moments_fast(K, a, b, y, yh, lab, total)
                res = ppi.ppi_bradley_terry(m)
                lams[label].append(res.lam)
                _score_bt(res, truth_theta, accs[label])
                _score_rates(ppi.ppi_model_win_rates(m), keep, truth_field, accs[label]["field"])
                if truth_rates is not None and rate_pairs is not None and n >= WIN_RATE_MIN_N:
                    _score_rates(ppi.ppi_win_rates(m), rate_pairs, truth_rates, accs[label]["win_rate"])
        for method in methods:
            row: dict[str, Any] = {k: acc.summary() for k, acc in accs[method].items()}
            if method in lams:
                row["lambda_bt_median"] = float(np.median(lams[method]))
            out[method][n] = row
    return out


def _add_savings(result: dict[str, dict], grid: tuple[int, ...]) -> dict[str, dict]:
    """Per judge, per quantity and n: votes saved at equal mean width vs human only."""
    savings: dict[str, dict] = {}
    human = result["human only"]
    for method, rows in result.items():
        if method == "human only":
            continue
        savings[method] = {}
        for quantity in ("bt", "bt_diff", "win_rate", "field"):
            ns = [n for n in grid if human[n][quantity]["mean_width"] is not None]
            if len(ns) < 2:
                continue
            hw = [human[n][quantity]["mean_width"] for n in ns]
            savings[method][quantity] = {
                n: savings_at_equal_width(ns, hw, n, rows[n][quantity]["mean_width"]) for n in ns
            }
    return savings


def _sim_world(data: ArenaJudgeData, rng: np.random.Generator, pool: int):
    """Simulated crowd calibrated to the Arena data: strengths and tie share of the full human fit,
    battles drawn with the Arena pair proportions."""
    K = len(data.names)
    tie = float(np.mean(data.human == 0.5))
    full = ppi.ppi_bradley_terry(ppi.pair_moments(K, data.a, data.b, data.human, data.human), lam=0)
    # latent strengths: scaled so that the decisive votes follow BT with the fitted log-odds
    # (ties as half-wins shrink fitted strengths by about (1 − tie)), then ties are added at random
    strength = full.theta / max(1.0 - tie, 1e-9)
    pick = rng.integers(0, len(data.a), pool)
    a, b = data.a[pick], data.b[pick]
    p = 1.0 / (1.0 + np.exp(-(strength[a] - strength[b])))

    def vote(r: np.random.Generator) -> np.ndarray:
        return np.where(r.random(pool) < tie, 0.5, (r.random(pool) < p).astype(float))

    def draw(r: np.random.Generator) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        y = vote(r)
        judge = np.where(r.random(pool) < SIM_RHO, y, vote(r))
        return y, {f"synthetic judge (rho = {SIM_RHO})": judge}

    # the estimand: the tie-as-half logistic fit to the expected scores of this battle mix
    ey = (1 - tie) * p + tie * 0.5
    expected = ppi.pair_moments(K, a, b, ey, ey)
    truth = ppi.ppi_bradley_terry(expected, lam=0).theta
    return a, b, draw, truth, ppi.ppi_model_win_rates(expected, lam=0).classical


def run_judges_benchmark(
    data_dir: str | Path | None = None,
    repeats: int = 300,
    seed: int = 0,
    quick: bool = False,
    grid: tuple[int, ...] = N_GRID,
) -> dict:
    """Run the benchmark and return a JSON-ready dict (see the module docstring for the method).

    ``result["judges"][label][n]`` holds per method the summaries (coverage, its CI, mean width,
    studies) of "bt", "bt_diff", "rank_sets", "win_rate"; ``result["savings"][label][quantity][n]``
    the share of human votes saved at equal mean width; ``result["simulated"]`` the same for the
    synthetic ρ = 0.75 judge. `quick=True`: 12 repetitions on n = 500, 2,000, 5,000 (a smoke test).

    Example (what `dialeval bench judges --json judges.json` does)::

        from dialeval.bench.judges import run_judges_benchmark
        out = run_judges_benchmark(repeats=300)
        print(out["headline"])
    """
    t0 = time.perf_counter()
    if quick:
        repeats, grid = min(repeats, 12), (500, 2000, 5000)
    rng = np.random.default_rng(seed)
    data = load_arena_judges(data_dir)
    K, M = len(data.names), len(data.a)
    full = ppi.pair_moments(K, data.a, data.b, data.human, data.human)
    truth_theta = ppi.ppi_bradley_terry(full, lam=0).theta
    truth_rates = np.where(full.n > 0, full.sy / np.maximum(full.n, 1), np.nan)
    rate_pairs = full.n >= WIN_RATE_MIN_BATTLES
    truth_field = ppi.ppi_model_win_rates(full, lam=0).classical

    def real(_: np.random.Generator) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        return data.human, data.judges

    real_out = _run_grid(
        K, data.a, data.b, real, data.judges, truth_theta, truth_rates, rate_pairs, truth_field, grid, repeats, rng, M
    )
    sim_a, sim_b, sim_draw, sim_truth, sim_field = _sim_world(data, rng, SIM_POOL)
    sim_label = f"synthetic judge (rho = {SIM_RHO})"
    sim_out = _run_grid(
        K,
        sim_a,
        sim_b,
        sim_draw,
        {sim_label: np.zeros(0)},
        sim_truth,
        None,
        None,
        sim_field,
        grid,
        repeats,
        rng,
        SIM_POOL,
    )
    agreement = {}
    decisive = data.human != 0.5
    for label, yh in data.judges.items():
        agreement[label] = {
            "correlation_with_crowd": float(np.corrcoef(data.human, yh)[0, 1]),
            "agreement_on_decisive_votes": float(np.mean(yh[decisive] == data.human[decisive])),
            "share_first_wins": float(np.mean(yh == 1.0)),
        }
    for label, yh in data.judges.items():
        agreement[label].update(_ceilings(data, yh))
    savings = _add_savings(real_out, grid)
    sim_savings = _add_savings(sim_out, grid)
    result = {
        "data": {"battles": M, "models": K, "folder": str(data_dir or default_data_dir())},
        "grid": list(grid),
        "repeats": repeats,
        "seed": seed,
        "quick": quick,
        "agreement": agreement,
        "judges": real_out,
        "savings": savings,
        "simulated": {"rho": SIM_RHO, "pool": SIM_POOL, "results": sim_out, "savings": sim_savings},
    }
    result["headline"] = _headline(result)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


def _ceilings(data: ArenaJudgeData, yh: np.ndarray) -> dict[str, float]:
    """What a judge can save at best (as many judge labels as wanted, n/N → 0), from all the battles.

    A win rate or a strength is estimated *given which bots fought*, so only the part of the judge's
    verdict that varies within a pair (per-pair win rates, BT) or within a bot's battles (win rate
    against the field) helps: the savings ceiling is that correlation squared. For BT it is computed
    from the sandwich pieces at the full-data fit: 1 − (mean se at the best λ / mean se at λ = 0)²."""
    K = len(data.names)
    m = ppi.pair_moments(K, data.a, data.b, data.human, yh)
    lo, hi = np.minimum(data.a, data.b), np.maximum(data.a, data.b)
    y_o = np.where(data.a > data.b, 1 - data.human, data.human)
    h_o = np.where(data.a > data.b, 1 - yh, yh)
    pair = lo * K + hi
    counts = np.bincount(pair, minlength=K * K)
    safe = np.maximum(counts, 1)
    ry = y_o - (np.bincount(pair, weights=y_o, minlength=K * K) / safe)[pair]
    rh = h_o - (np.bincount(pair, weights=h_o, minlength=K * K) / safe)[pair]
    within_pair = float(np.corrcoef(ry, rh)[0, 1])
    per_bot = []
    for k in range(K):
        ys = np.concatenate([data.human[data.a == k], 1 - data.human[data.b == k]])
        hs = np.concatenate([yh[data.a == k], 1 - yh[data.b == k]])
        per_bot.append(np.corrcoef(ys, hs)[0, 1])
    theta = ppi.ppi_bradley_terry(m, lam=0, small_sample=False).theta
    pc = ppi._bt_pieces(m, theta)
    Hinv = np.linalg.pinv(pc["H"])
    n = float(m.n.sum())

    def mean_se(lam: float) -> float:
        second = pc["gg"] - 2 * lam * pc["gh"] + lam**2 * pc["hh"]
        V = ppi._cov(second, pc["g"] - lam * pc["h"], n)
        return float(np.mean(np.sqrt(np.clip(np.diag(Hinv @ V @ Hinv), 0, None))))

    best = min(mean_se(x) for x in np.linspace(0, 1, 101))
    return {
        "correlation_within_pair": within_pair,
        "correlation_within_bot_median": float(np.median(per_bot)),
        "ceiling_win_rate": within_pair**2,
        "ceiling_field_median": float(np.median(per_bot)) ** 2,
        "ceiling_bt": 1.0 - (best / mean_se(0.0)) ** 2,
    }


def _headline(result: dict) -> dict:
    """The numbers the targets are about: worst coverage of any method/quantity (BT scores,
    differences, win rates), and BT-score savings per judge (mean over the grid, and per n)."""
    lows = []
    for rows in list(result["judges"].values()) + list(result["simulated"]["results"].values()):
        for row in rows.values():
            for q in ("bt", "bt_diff", "win_rate", "field"):
                if row[q]["coverage"] is not None:
                    lows.append(row[q]["coverage"])
    per_judge = {}
    for label, quantities in list(result["savings"].items()) + list(result["simulated"]["savings"].items()):
        bt = quantities.get("bt", {})
        per_judge[label] = {
            f"{q}_savings_mean": float(np.mean(list(quantities[q].values()))) if quantities.get(q) else None
            for q in ("bt", "bt_diff", "win_rate", "field")
        }
        per_judge[label]["bt_savings_by_n"] = bt
        per_judge[label]["field_savings_by_n"] = quantities.get("field", {})
    return {"min_coverage": float(min(lows)) if lows else None, "savings": per_judge}


def plot_widths(result: dict, path: str | Path) -> None:
    """Mean BT-score interval width vs human votes per method (real data; simulated judge), and the
    share of human votes saved at equal width per judge (BT scores solid, field win rates dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, rows, title in (
        (axes[0], result["judges"], "Arena (26,919 battles): BT scores"),
        (axes[1], result["simulated"]["results"], f"simulated crowd, judge with rho = {result['simulated']['rho']}"),
    ):
        for method, by_n in rows.items():
            ns = sorted(by_n, key=int)
            ax.plot([int(n) for n in ns], [by_n[n]["bt"]["mean_width"] for n in ns], marker="o", label=method)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("human votes n")
        ax.set_ylabel("mean 95% interval width (Elo points)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    ax = axes[2]
    savings = {**result["savings"], **result["simulated"]["savings"]}
    for k, (label, quantities) in enumerate(savings.items()):
        color = f"C{k + 1}"
        for quantity, style in (("bt", "-"), ("field", "--")):
            by_n = quantities.get(quantity, {})
            ns = sorted(by_n, key=int)
            name = f"{label}: {'BT' if quantity == 'bt' else 'field win rate'}"
            ax.plot([int(n) for n in ns], [100 * by_n[n] for n in ns], style, color=color, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("human votes n (with the judge)")
    ax.set_ylabel("human votes saved at equal width (%)")
    ax.set_title("savings vs people alone", fontsize=10)
    ax.axhline(0, color="grey", lw=0.5)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def print_summary(result: dict, json_path: str | Path | None = None, plot_path: str | Path | None = None) -> None:
    """What `dialeval bench judges` prints: per method and n the coverage and mean width of the BT
    scores and of the field win rates, then the savings; writes the JSON and the plot if asked."""
    import json

    print(f"{result['data']['battles']} battles, {result['data']['models']} models, {result['repeats']} studies per n")
    for title, rows in (("Arena", result["judges"]), ("simulated crowd", result["simulated"]["results"])):
        print(f"{title}: method, n, BT coverage, BT width (Elo), field win-rate coverage, width, lambda")
        for method, by_n in rows.items():
            for n, row in by_n.items():
                bt, fld = row["bt"], row["field"]
                lam = row.get("lambda_bt_median")
                print(
                    f"  {method:30s} {int(n):6d}  {bt['coverage']:.3f}  {bt['mean_width']:7.1f}"
                    f"  {fld['coverage']:.3f}  {fld['mean_width']:.4f}  {'' if lam is None else f'{lam:.2f}'}"
                )
    print(f"lowest coverage (BT scores, differences, win rates): {result['headline']['min_coverage']:.3f}")
    for label, s in result["headline"]["savings"].items():
        parts = [
            f"{q} {s[f'{q}_savings_mean']:.1%}"
            for q in ("bt", "bt_diff", "win_rate", "field")
            if s.get(f"{q}_savings_mean") is not None
        ]
        print(f"human votes saved at equal width, {label}: " + ", ".join(parts))
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
        print(f"wrote {json_path}")
    if plot_path:
        plot_widths(result, plot_path)
        print(f"wrote {plot_path}")
