"""Judge-guided anytime-valid stopping: human judgments needed to decide one bot pair.

Compares `dialeval.stats.ppi_sequential.GuidedPairTest` (units drawn with q ∝ sqrt(judge
uncertainty) mixed half-and-half with uniform, importance-weighted PPI pseudo-outcomes, betting
test) with the human-only beta-binomial mixture test `dialeval.stats.sequential.SequentialPairTest`
on uniformly drawn units. Both at alpha = 0.05, one pair; a human step is one judgment, ties
included (the beta-binomial test ignores ties but a person still spent the time).

(1) Simulated pools: 500 units; a unit leans to a (E[Y|u] = 0.95: a wins unless the person calls a
tie, which people do 10% of the time), to b (0.05) or is a toss-up (0.5, 20% of units). The judge
reports the unit's leaning (1, 0, ½) with probability r, else a uniformly random verdict; r is set
so that its correlation with a person's score is ρ. Its uncertainty is v(f) = E[(Y − f)² | judge
said f] over the pool (what a calibration set would teach).

(2) Arena data (``--data``: human.jsonl and the LLM judges' files, one line per battle, lined up by
``num``): for the 10 most frequent model pairs, the pool is the pair's battles, Y the crowd vote and
f the judge's verdict (oriented to the pair's first model, sorted by name). Steps resample the pool
with replacement, so θ is the pool's mean human score. Uncertainty: "calibrated" = mean (Y − f)²
per raw verdict (model_a / model_b / tie, so a judge's position bias is learnt) over the battles of
*every other pair* (held out: never the pair being tested), or the fixed rule "tie-flag"
v = 0.05 + 0.95·[f = ½]. Type-I error on real data: a null pool, the pair's battles each taken once
as recorded and once with sides swapped (Y → 1 − Y, f → 1 − f), so θ = ½ exactly.

    dialeval bench judge-guided --json benchmarks/judge_guided_stopping.json
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..errors import DialevalError
from ..stats.ppi_sequential import GuidedPairTest, GuidedPool, guided_probabilities
from ..stats.sequential import SequentialPairTest
from .judges import default_data_dir

JUDGES = ("gpt-4-0125-preview", "gpt-3.5-turbo", "claude-3-opus-20240229")
TIE = 0.1
LEAN = 0.95  # E[Y|u] of a unit leaning to a: a wins whenever the person does not call a tie


# -- one run of each test ------------------------------------------------------------------------------


def guided_steps(pool: GuidedPool, draw_y, rng, cap: int) -> tuple[int, bool]:
    t = GuidedPairTest(pool, 0.05, grid=0)
    while t.n < cap and not t.decided:
        u = pool.draw(rng)
        t.update(u, draw_y(u, rng))
    return t.n, t.decided


def uniform_steps(n_units: int, draw_y, rng, cap: int) -> tuple[int, bool]:
    s = SequentialPairTest()
    k = 0
    while k < cap and not s.decided:
        y = draw_y(int(rng.integers(n_units)), rng)
        s.update("tie" if y == 0.5 else y == 1.0)
        k += 1
    return k, s.decided


def summary(runs: list[tuple[int, bool]]) -> dict[str, float]:
    steps = np.array([r[0] for r in runs], dtype=float)
    return {
        "median": float(np.median(steps)),
        "mean": round(float(steps.mean()), 1),
        "decided": round(float(np.mean([r[1] for r in runs])), 3),
    }


def compare(pool: GuidedPool, draw_y, reps: int, cap: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    g = summary([guided_steps(pool, draw_y, rng, cap) for _ in range(reps)])
    u = summary([uniform_steps(pool.size, draw_y, rng, cap) for _ in range(reps)])
    return {"guided": g, "uniform_beta_binomial": u, "ratio_median": round(g["median"] / u["median"], 3)}


# -- (1) simulated pools -------------------------------------------------------------------------------


def sim_pool(theta: float, rho: float, rng, n: int = 500):
    """Leanings, the judge's verdicts and E[Y|u] for a pool with mean human score theta and a judge
    whose correlation with a person's score is about rho."""
    toss = 0.2
    # theta = (1 - toss) (LEAN s_a + (1 - LEAN)(1 - s_a)) + 0.5 toss
    share_a = (theta - 0.5 * toss - (1 - LEAN) * (1 - toss)) / ((2 * LEAN - 1) * (1 - toss))
    n_a, n_toss = round(n * share_a * (1 - toss)), round(n * toss)  # exact counts: theta as asked
    kind = rng.permutation(np.repeat([1.0, 0.5, 0.0], [n_a, n_toss, n - n_a - n_toss]))
    mu = np.where(kind == 1.0, LEAN, np.where(kind == 0.0, 1 - LEAN, 0.5))
    noise = rng.choice([0.0, 0.5, 1.0], size=n)
    pick = rng.random(n)

    def judge(r):
        return np.where(pick < r, kind, noise)

    def corr(f):  # corr(f_U, Y) with U uniform, Y | u with mean mu, ties TIE
        ey2 = TIE * 0.25 + (1 - TIE) * (mu - TIE * 0.5) / (1 - TIE)  # E[Y² | u]
        vy = ey2.mean() - mu.mean() ** 2
        cov = (f * mu).mean() - f.mean() * mu.mean()
        return cov / np.sqrt(vy * f.var()) if f.var() > 0 and vy > 0 else 0.0

    lo, hi = 0.0, 1.0
    for _ in range(40):  # corr grows with r
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if corr(judge(mid)) < rho else (lo, mid)
    f = judge(hi if rho > 0 else 0.0)
    # calibrated uncertainty per verdict: E[(Y − f)² | f] = E[Y²|u] − 2 f mu + f² averaged per verdict
    ey2 = TIE * 0.25 + (1 - TIE) * (mu - TIE * 0.5) / (1 - TIE)
    err = ey2 - 2 * f * mu + f * f
    v = np.zeros(n)
    for val in np.unique(f):
        v[f == val] = err[f == val].mean()
    return mu, f, v, float(corr(f))


def sim_draw(mu):
    p_win = (mu - TIE * 0.5) / (1 - TIE)

    def draw(u, rng):
        if rng.random() < TIE:
            return 0.5
        return 1.0 if rng.random() < p_win[u] else 0.0

    return draw


def simulated(reps: int, cap: int) -> list[dict]:
    out = []
    for k, (rho, theta) in enumerate([(r, t) for r in (0.5, 0.75, 0.0) for t in (0.6, 0.65, 0.7)]):
        rng = np.random.default_rng(100 + k)
        mu, f, v, got = sim_pool(theta, rho, rng)
        pool = GuidedPool(f, guided_probabilities(v))
        row = {"rho_target": rho, "rho": round(got, 3), "theta": round(float(mu.mean()), 3)}
        row.update(compare(pool, sim_draw(mu), reps, cap, seed=200 + k))
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


# -- (2) Arena data ------------------------------------------------------------------------------------


def load(data: Path) -> dict[str, list[dict]]:
    out = {}
    for name in ("human", *JUDGES):
        with open(data / f"{name}.jsonl") as fh:
            out[name] = [json.loads(line) for line in fh]
    return out


def score(winner: str) -> float:
    return 1.0 if winner == "model_a" else 0.0 if winner == "model_b" else 0.5


def real_draw(y):
    return lambda u, rng: float(y[u])


def arena(data: Path, reps: int, cap: int, null_reps: int, null_cap: int) -> dict:
    rows = load(data)
    human = rows["human"]
    for name in JUDGES:
        assert [r["num"] for r in rows[name]] == [r["num"] for r in human], f"{name} does not line up"
    pairs = np.array(["|".join(sorted((r["model_a"], r["model_b"]))) for r in human])
    flip = np.array([r["model_a"] > r["model_b"] for r in human])  # orient to the pair's first name
    y_raw = np.array([score(r["winner"]) for r in human])
    y = np.where(flip, 1 - y_raw, y_raw)
    names, counts = np.unique(pairs, return_counts=True)
    top = names[np.argsort(-counts, kind="stable")[:10]]
    results, nulls = [], []
    for judge in JUDGES:
        verdict = np.array([r["winner"] if r["winner"] in ("model_a", "model_b") else "tie" for r in rows[judge]])
        f_raw = np.array([score(w) for w in verdict])
        f = np.where(flip, 1 - f_raw, f_raw)
        sq = (y_raw - f_raw) ** 2  # the same in either orientation
        for k, pair in enumerate(top):
            inside = pairs == pair
            # calibrated on every other pair's battles, per raw verdict (keeps position bias)
            calib = {w: float(sq[~inside & (verdict == w)].mean()) for w in ("model_a", "model_b", "tie")}
            v_cal = np.array([calib[w] for w in verdict[inside]])
            fy, yy = f[inside], y[inside]
            rules = {"calibrated": v_cal}
            if judge == JUDGES[0]:
                rules["tie-flag"] = 0.05 + 0.95 * (fy == 0.5)
            for rule, v in rules.items():
                pool = GuidedPool(fy, guided_probabilities(v))
                row = {
                    "judge": judge,
                    "uncertainty": rule,
                    "pair": pair,
                    "n_battles": int(inside.sum()),
                    "theta": round(float(yy.mean()), 3),
                    "judge_agreement_corr": round(float(np.corrcoef(fy, yy)[0, 1]), 3),
                }
                row.update(compare(pool, real_draw(yy), reps, cap, seed=300 + k))
                print(json.dumps(row), flush=True)
                results.append(row)
            if k < 3 and judge in (JUDGES[0], JUDGES[1]):  # null pools: each battle as recorded and swapped
                f0 = np.concatenate([fy, 1 - fy])
                y0 = np.concatenate([yy, 1 - yy])
                pool = GuidedPool(f0, guided_probabilities(np.concatenate([v_cal, v_cal])))
                rng = np.random.default_rng(400 + k)
                rej = [guided_steps(pool, real_draw(y0), rng, null_cap)[1] for _ in range(null_reps)]
                rate = float(np.mean(rej))
                row = {
                    "judge": judge,
                    "pair": pair,
                    "theta": round(float(y0.mean()), 6),
                    "runs": null_reps,
                    "steps": null_cap,
                    "type_one_error": round(rate, 4),
                    "se": round(float(np.sqrt(0.05 * 0.95 / null_reps)), 4),
                }
                print(json.dumps(row), flush=True)
                nulls.append(row)
    return {"pairs": results, "null": nulls}


def run_judge_guided_benchmark(
    data_dir: str | Path | None = None,
    reps: int = 200,
    cap: int = 1500,
    null_reps: int = 400,
    null_cap: int = 1000,
    skip_sim: bool = False,
    quick: bool = False,
) -> dict:
    """Run both parts and return a JSON-ready dict: ``simulated`` (part 1, unless `skip_sim`),
    ``arena`` ({"pairs": ..., "null": ...}, part 2). `cap`: human steps after which a run counts as
    undecided. `quick=True`: a smoke test in seconds (3 runs, short caps), not a measurement.

    Example (what `dialeval bench judge-guided --json judge_guided.json` does)::

        from dialeval.bench.judge_guided import run_judge_guided_benchmark
        out = run_judge_guided_benchmark()
    """
    data = Path(data_dir) if data_dir is not None else default_data_dir()
    if not (data / "human.jsonl").exists():
        raise DialevalError(
            f"Arena judge data not found under {data} (human.jsonl and the judges' files); pass --data DIR."
        )
    if quick:
        reps, cap, null_reps, null_cap = min(reps, 3), min(cap, 200), min(null_reps, 3), min(null_cap, 100)
    t0 = time.perf_counter()
    out: dict = {"alpha": 0.05, "reps": reps, "cap": cap, "quick": quick}
    if not skip_sim:
        out["simulated"] = simulated(reps, cap)
    out["arena"] = arena(data, reps, cap, null_reps, null_cap)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out
