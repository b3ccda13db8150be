"""Benchmark: report time and peak memory at the scale of real studies (synthetic data, public API).

Targets (issue 14, part 1), each the full `build_report` (every statistic of the method; no HTML):
- Direct Assessment, 100,000 ratings: < 30 s;
- ACUTE-Eval, 1,000,000 judgments among 100 bots: < 60 s and < 2 GB;
- Spot The Bot, 100,000 annotated segments: < 30 s;
- arena battles (Bradley-Terry leaderboard of the arena method), 1,000,000 among 100 models: < 60 s, < 2 GB.

Each case runs in its own child process so peak memory (ru_maxrss) is that case's alone.
Data: DA and ACUTE are synthetic `Dataset`s (seeded); Spot The Bot tiles the published DailyDialog
set (../shared/data) with fresh ids up to the target size, because its package/segment structure
is what the analysis expects.

Run: .venv/bin/python benchmarks/scaling.py [--only da,acute,stb] [--scale 1.0] [--json out.json]
(`--scale 0.1` for a quick look; the targets are for scale 1.)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import time
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def da_dataset(ratings: int, seed: int = 0, systems: int = 10, per_unit: int = 6, units_per_annotator: int = 3):
    """A Direct Assessment study: HITs of `per_unit` conversations (one QC bot + distinct ordinary
    systems), each rated on the seven criteria; 10% careless annotators (QC not rated lower)."""
    from dialeval.records import DA_CRITERIA, Annotator, Conversation, Dataset, Judgment, Unit

    rng = np.random.default_rng(seed)
    names = [f"sys{k:02d}" for k in range(systems)]
    strength = dict(zip(names, rng.normal(0, 8, systems)))
    strength["qc"] = -25.0
    n_units = ratings // per_unit
    convs, units, judgments, annotators = [], [], [], []
    for u in range(n_units):
        ann = f"w{u // units_per_annotator:06d}"
        if u % units_per_annotator == 0:
            annotators.append(Annotator(ann))
        careless = (u // units_per_annotator) % 10 == 0
        lenience = rng.normal(0, 10)
        chosen = ["qc", *rng.choice(names, per_unit - 1, replace=False).tolist()]
        ids = []
        for s in chosen:
            cid = f"c{len(convs):07d}"
            convs.append(Conversation(cid, [s], []))
            ids.append(cid)
            base = 50 + lenience + (0 if careless else strength[s])
            vals = np.clip(base + rng.normal(0, 15, len(DA_CRITERIA)), 0, 100).round()
            value = {c: float(100 - v if c in ("robotic", "repetitive") else v) for c, v in zip(DA_CRITERIA, vals)}
            judgments.append(
                Judgment(ann, f"u{u:06d}", "ratings", value, conversation_id=cid, elapsed_s=float(rng.gamma(4, 60)))
            )
        units.append(Unit(f"u{u:06d}", "direct-assessment", ids))
    return Dataset("direct-assessment", convs, annotators, units, judgments, {"study": "scaling-da"})


def acute_dataset(judgments: int, bots: int = 100, seed: int = 0, per_unit: int = 5, convs_per_bot: int = 50):
    """An ACUTE-Eval study: bots with N(0, 1) log-strengths, units of `per_unit` comparisons of
    random pairs of conversations (one per bot), Bradley-Terry outcomes, one question."""
    from dialeval.records import Annotator, Conversation, Dataset, Judgment, Unit

    rng = np.random.default_rng(seed)
    names = [f"bot{k:03d}" for k in range(bots)]
    theta = rng.normal(0, 1, bots)
    convs = [Conversation(f"{b}-c{k:03d}", [b], []) for b in names for k in range(convs_per_bot)]
    n_units = judgments // per_unit
    ia = rng.integers(0, bots, judgments)
    ib = (ia + rng.integers(1, bots, judgments)) % bots
    # a unit is one pair of conversations, judged by several annotators (10 pairs of conversations per
    # pair of bots), as ACUTE-Eval collects them
    ca = rng.integers(0, 10, judgments)
    cb = ca
    a_wins = rng.random(judgments) < 1 / (1 + np.exp(-(theta[ia] - theta[ib])))
    secs = rng.gamma(4, 15, judgments)
    units, out, annotators, seen = [], [], [], set()
    for u in range(n_units):
        ann = f"w{u // 4:06d}"
        if u % 4 == 0:
            annotators.append(Annotator(ann))
        for k in range(u * per_unit, (u + 1) * per_unit):
            a_id = f"{names[ia[k]]}-c{ca[k]:03d}"
            b_id = f"{names[ib[k]]}-c{cb[k]:03d}"
            uid = f"u-{a_id}-{b_id}"
            if uid not in seen:
                seen.add(uid)
                units.append(Unit(uid, "acute", [a_id, b_id]))
            win, lose = (a_id, b_id) if a_wins[k] else (b_id, a_id)
            out.append(
                Judgment(
                    ann,
                    uid,
                    "engaging",
                    {"winner": win, "loser": lose},
                    elapsed_s=float(secs[k]),
                    shown_order=[a_id, b_id],
                )
            )
    return Dataset("acute", convs, annotators, units, out, {"study": "scaling-acute"})


def arena_dataset(battles: int, bots: int = 100, seed: int = 0, tie_share: float = 0.1):
    """Chatbot-Arena-style battles (the importers' arena method): 100 models, Bradley-Terry outcomes,
    10% ties, 20 votes per voter."""
    from dialeval.records import Annotator, Dataset, Judgment

    rng = np.random.default_rng(seed)
    names = [f"model{k:03d}" for k in range(bots)]
    theta = rng.normal(0, 1, bots)
    ia = rng.integers(0, bots, battles)
    ib = (ia + rng.integers(1, bots, battles)) % bots
    a_wins = rng.random(battles) < 1 / (1 + np.exp(-(theta[ia] - theta[ib])))
    tie = rng.random(battles) < tie_share
    annotators = [Annotator(f"v{k:06d}") for k in range(-(-battles // 20))]
    judgments = [
        Judgment(
            f"v{k // 20:06d}",
            None,
            "battle",
            {
                "model_a": names[ia[k]],
                "model_b": names[ib[k]],
                "winner": "tie" if tie[k] else ("model_a" if a_wins[k] else "model_b"),
                "turn": 1,
            },
            meta={"battle": f"b{k}"},
        )
        for k in range(battles)
    ]
    return Dataset("arena", [], annotators, [], judgments, {"study": "scaling-arena"})


def stb_dataset(segments: int, shared: Path = SHARED):
    """The published Spot The Bot DailyDialog set tiled with fresh ids to about `segments` annotated segments."""
    from dataclasses import replace

    from dialeval.formats.spot_the_bot import read_spot_the_bot
    from dialeval.records import Dataset

    base = read_spot_the_bot(shared / "spot-the-bot", "dailydialog")
    copies = max(1, -(-segments // len(base.judgments)))
    convs, annotators, units, judgments = [], [], [], []
    for k in range(copies):
        tag = f"~{k}"
        convs += [replace(c, id=c.id + tag) for c in base.conversations]
        annotators += [replace(a, id=a.id + tag) for a in base.annotators]
        units += [replace(u, id=u.id + tag, conversation_ids=[c + tag for c in u.conversation_ids]) for u in base.units]
        for j in base.judgments:
            meta = dict(j.meta)
            for key in ("annotation_id", "package_id"):
                if meta.get(key) is not None:
                    meta[key] = f"{meta[key]}{tag}"
            judgments.append(
                replace(
                    j,
                    annotator_id=j.annotator_id + tag,
                    unit_id=None if j.unit_id is None else j.unit_id + tag,
                    conversation_id=None if j.conversation_id is None else j.conversation_id + tag,
                    meta=meta,
                )
            )
    return Dataset(base.method, convs, annotators, units, judgments[:segments], {**base.meta, "study": "scaling-stb"})


CASES = {
    "da": ("Direct Assessment", 100_000, da_dataset, 30.0, None),
    "acute": ("ACUTE-Eval, 100 bots", 1_000_000, acute_dataset, 60.0, 2.0),
    "stb": ("Spot The Bot", 100_000, stb_dataset, 30.0, None),
    "arena": ("Arena battles, 100 models", 1_000_000, arena_dataset, 60.0, 2.0),
}


def _run(case: str, scale: float, queue) -> None:
    from dialeval.report import build_report

    label, size, make, _, _ = CASES[case]
    n = int(size * scale)
    t0 = time.perf_counter()
    dataset = make(n)
    t1 = time.perf_counter()
    c1 = time.process_time()
    report = build_report(dataset, {})
    t2 = time.perf_counter()
    cpu = time.process_time() - c1
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    queue.put(
        {
            "case": case,
            "label": label,
            "n": len(dataset.judgments),
            "build_data_s": round(t1 - t0, 2),
            "report_s": round(t2 - t1, 2),
            "report_cpu_s": round(cpu, 2),
            "peak_gb": round(peak_gb, 2),
            "systems": len(report.get("systems", [])),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="da,acute,stb")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    results = []
    for case in args.only.split(","):
        queue = ctx.Queue()
        proc = ctx.Process(target=_run, args=(case, args.scale, queue))
        proc.start()
        r = queue.get()
        proc.join()
        _, _, _, t_max, gb_max = CASES[case]
        r["target"] = f"< {t_max:g} s" + (f", < {gb_max:g} GB" if gb_max else "")
        r["met"] = bool(args.scale < 1 or (r["report_s"] < t_max and (gb_max is None or r["peak_gb"] < gb_max)))
        with open("/proc/loadavg") as f:
            r["loadavg"] = f.read().split()[:3]
        results.append(r)
        print(json.dumps(r), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
