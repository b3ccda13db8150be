"""Benchmark at the user's door: 1M arena battles, 100k Direct Assessment ratings and 100k Spot The
Bot segments through the installed `dialeval` command.

Target (issue 25, part 1): 1,000,000 battles among 100 models as JSON lines;
`dialeval import arena battles.jsonl STUDY` < 30 s and < 1.5 GB peak resident memory,
`dialeval report STUDY` < 20 s and < 1.5 GB. The same commands on 100,000 Direct Assessment ratings
(the published Dialogue-Eval free run 1 CSV tiled with fresh HIT, assignment and worker ids) and on
100,000 Spot The Bot segments (the published DailyDialog export tiled with fresh ids); their
in-memory `build_report` took 24 s and 16 s (issue 25), which the CLI figures sit beside.

Beside them, measured in the same run on the same machine (the limits the CLI cannot beat):
- parse: the time to read and parse every line of the file with the JSON reader the import uses
  (msgspec, dialeval.json_text; the standard library's json after it, for comparison);
- insert: the raw insert rate of the store (an executemany of judgment-shaped rows into SQLite, and
  into PostgreSQL when DIALEVAL_TEST_POSTGRES_URL or postgresql://postgres@127.0.0.1:5432/test answers).

Every figure comes with CPU time (user + sys of the child), peak RSS and the load average: the
machine is shared. Data: seeded Bradley-Terry battles (10% ties, 3% both bad) by 20,000 users.

Run: .venv/bin/python benchmarks/cli_scale.py [--only arena,da,stb] [--battles 1000000] [--ratings 100000]
     [--segments 100000] [--json benchmarks/cli_scale.json]   (needs ../shared/data for da and stb)
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "data"
DA_CSV = SHARED / "dialogue-eval" / "FreeTopicRound1" / "Combined_Batches_305hits.csv"
DIALEVAL = str(Path(sys.executable).with_name("dialeval"))
PG_URL = os.environ.get("DIALEVAL_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def write_battles(path: Path, n: int, models: int = 100, users: int = 20_000, seed: int = 0) -> None:
    """`n` battles as JSON lines, in the shape of Chatbot Arena's clean_battle dumps."""
    rng = random.Random(seed)
    names = [f"model-{k:03d}" for k in range(models)]
    strength = [rng.gauss(0, 1) for _ in names]
    start = 1_682_000_000.0
    with path.open("w", encoding="utf-8") as out:
        for k in range(n):
            a = rng.randrange(models)
            b = (a + rng.randrange(1, models)) % models
            u = rng.random()
            if u < 0.10:
                winner = "tie"
            elif u < 0.13:
                winner = "tie (bothbad)"
            else:
                p_a = 1 / (1 + 10 ** ((strength[b] - strength[a]) * 0.5))
                winner = "model_a" if rng.random() < p_a else "model_b"
            record = {
                "question_id": f"q{k:07x}{rng.getrandbits(32):08x}",
                "model_a": names[a],
                "model_b": names[b],
                "winner": winner,
                "judge": f"arena_user_{rng.randrange(users)}",
                "turn": 1 + (rng.random() < 0.2),
                "anony": True,
                "language": "English",
                "tstamp": round(start + k * 11.3, 4),
            }
            out.write(json.dumps(record) + "\n")


def write_da(path: Path, ratings: int, source: Path = DA_CSV) -> int:
    """The published Dialogue-Eval CSV tiled with fresh HIT, assignment and worker ids (copy k adds
    `x<k>`) until it holds about `ratings` rated conversations; the number of data rows."""
    from dialeval.formats.dialogue_eval import read_dialogue_eval_csv

    per_copy = len(read_dialogue_eval_csv(source).judgments)
    copies = max(1, -(-ratings // per_copy))
    csv.field_size_limit(1 << 30)
    with source.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    ids = [header.index(c) for c in ("HITId", "AssignmentId", "WorkerId")]
    n = 0
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        for k in range(copies):
            for row in body:
                row = list(row)
                for i in ids:
                    row[i] = f"{row[i]}x{k}"
                writer.writerow(row)
                n += 1
    return n


def write_stb(folder: Path, segments: int, domain: str = "dailydialog", source: Path = SHARED / "spot-the-bot") -> int:
    """The published Spot The Bot export of `domain` tiled with fresh ids (copy k adds `x<k>` to every
    conversation, package, annotation and user id) to about `segments` annotated segments; copies."""
    from dialeval.formats.spot_the_bot import read_spot_the_bot

    per_copy = len(read_spot_the_bot(source, domain).judgments)
    copies = max(1, -(-segments // per_copy))

    def tagged(value, tag):
        if isinstance(value, dict) and "$oid" in value:
            return {**value, "$oid": value["$oid"] + tag}
        return value + tag if isinstance(value, str) else value

    def copy(kind: str, fix) -> None:
        docs = [json.loads(line) for line in (source / f"{kind}-dialogues-full-{domain}.json").open(encoding="utf-8")]
        with (folder / f"{kind}-dialogues-full-{domain}.json").open("w", encoding="utf-8") as out:
            for k in range(copies):
                for doc in docs:
                    out.write(json.dumps(fix(json.loads(json.dumps(doc)), f"x{k}")) + "\n")

    def sampled(doc, tag):
        doc["_id"] = tagged(doc["_id"], tag)
        return doc

    def packed(doc, tag):
        doc["_id"] = tagged(doc["_id"], tag)
        for entry in doc.get("package", []):
            entry["convo_id"] = tagged(entry["convo_id"], tag)
        return doc

    def annotated(doc, tag):
        for key in ("_id", "convo_id", "package_id", "user_name"):
            if key in doc:
                doc[key] = tagged(doc[key], tag)
        return doc

    folder.mkdir(parents=True, exist_ok=True)
    for kind, fix in (("sampled", sampled), ("packed", packed), ("annotated", annotated)):
        copy(kind, fix)
    return copies


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_child(cmd: list[str]) -> dict:
    """Run a command; its wall time, CPU time (user+sys) and peak RSS, from os.wait4 on that child."""
    load_before = load()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    lines = stdout.strip().splitlines()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({code}): {stderr[-2000:]}")
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "load_before": load_before,
        "load_after": load(),
        # the summary line of an import or report (warnings may follow it), else the last line
        "stdout_tail": [x for x in lines if x.startswith(("imported into", "wrote "))][-1:] or lines[-1:],
    }


PARSE = """
import json, sys, time
import msgspec
decode = msgspec.json.Decoder().decode
t0 = time.perf_counter(); c0 = time.process_time()
n = 0
for name in sys.argv[1:]:
    with open(name, encoding="utf-8") as f:
        for line in f:
            decode(line); n += 1
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
out = {"lines": n, "msgspec_wall_s": round(wall, 2), "msgspec_cpu_s": round(cpu, 2)}
t0 = time.perf_counter(); c0 = time.process_time()
for name in sys.argv[1:]:
    with open(name, encoding="utf-8") as f:
        for line in f:
            json.loads(line)
out.update(json_wall_s=round(time.perf_counter() - t0, 2), json_cpu_s=round(time.process_time() - c0, 2))
print(json.dumps(out))
"""

# the Dialogue-Eval CSV: the csv module over every row, and the JSON of each row's answers
PARSE_CSV = """
import csv, json, sys, time
import msgspec
decode = msgspec.json.Decoder().decode  # the reader the import uses (dialeval.json_text)
csv.field_size_limit(1 << 30)
t0 = time.perf_counter(); c0 = time.process_time()
n = 0
with open(sys.argv[1], encoding="utf-8", newline="") as f:
    rows = csv.reader(f)
    answers = next(rows).index("Answer.taskAnswers")
    for row in rows:
        decode(row[answers]); n += 1
print(json.dumps({"rows": n, "csv_json_wall_s": round(time.perf_counter() - t0, 2),
                  "csv_json_cpu_s": round(time.process_time() - c0, 2)}))
"""

INSERT = """
import json, os, sys, time
from sqlalchemy import create_engine, text
url, n = sys.argv[1], int(sys.argv[2])
engine = create_engine(url)
table = f"bench_insert_{os.getpid()}"  # two runs on one shared database must not drop each other's table
rows = [
    {"study_id": 1, "annotator_id": 1 + k % 1000, "question": "battle",
     "value": json.dumps({"model_a": "model-001", "model_b": "model-002", "winner": "model_a", "turn": 1}),
     "meta": json.dumps({"battle": f"q{k:07x}", "question_id": f"q{k:07x}", "language": "English", "anony": True}),
     "shown_order": json.dumps(["model-001", "model-002"]), "created_at": "2023-04-20 12:00:00+00:00"}
    for k in range(n)
]
with engine.begin() as c:
    c.execute(text(f"DROP TABLE IF EXISTS {table}"))
    c.execute(text(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, study_id INTEGER, annotator_id INTEGER, "
                   "question VARCHAR(100), value TEXT, meta TEXT, shown_order TEXT, created_at VARCHAR(40))"
                   if url.startswith("sqlite") else
                   f"CREATE TABLE {table} (id SERIAL PRIMARY KEY, study_id INTEGER, annotator_id INTEGER, "
                   "question VARCHAR(100), value JSON, meta JSON, shown_order JSON, created_at TIMESTAMPTZ)"))
t0 = time.perf_counter(); c0 = time.process_time()
stmt = text(f"INSERT INTO {table} (study_id, annotator_id, question, value, meta, shown_order, created_at) "
            "VALUES (:study_id, :annotator_id, :question, :value, :meta, :shown_order, :created_at)")
with engine.begin() as c:
    for k in range(0, n, 10000):
        c.execute(stmt, rows[k : k + 10000])
wall = time.perf_counter() - t0
with engine.begin() as c:
    c.execute(text(f"DROP TABLE {table}"))
print(json.dumps({"rows": n, "wall_s": round(wall, 2), "cpu_s_client": round(time.process_time() - c0, 2),
                  "rows_per_s": round(n / wall)}))
"""


def pg_reachable() -> bool:
    try:
        import psycopg

        psycopg.connect(PG_URL, connect_timeout=3).close()
        return True
    except Exception:
        return False


def limits(result: dict, work: Path, parse: list[str], rows: int) -> None:
    """The limits beside a CLI figure, in the same run: parsing the file(s), raw inserts of `rows`."""
    limit = run_child([sys.executable, "-c", *parse])
    limit.update(json.loads(limit.pop("stdout_tail")[0]))
    result["limit_parse"] = limit
    inserts: dict = {}
    for name, url in (("sqlite", f"sqlite:///{work / 'bench.db'}"), ("postgresql", PG_URL)):
        if name == "postgresql":
            if not pg_reachable():
                inserts[name] = "unreachable"
                continue
            url = url.replace("postgresql://", "postgresql+psycopg://", 1)
        r = run_child([sys.executable, "-c", INSERT, url, str(rows)])
        r.update(json.loads(r.pop("stdout_tail")[0]))
        inserts[name] = r
    result["limit_insert"] = inserts


def through_cli(result: dict, fmt: str, source: Path, study: Path, options: list[str], limit_s: dict) -> None:
    """`dialeval import` then `dialeval report`, each timed in its own child."""
    shutil.rmtree(study, ignore_errors=True)
    result["import"] = run_child([DIALEVAL, "import", fmt, str(source), str(study), *options])
    print(json.dumps({fmt: {"import": result["import"]}}), flush=True)
    result["report"] = run_child([DIALEVAL, "report", str(study)])
    print(json.dumps({fmt: {"report": result["report"]}}), flush=True)
    rss = 1536
    result["targets"] = {
        "import_s": limit_s["import"],
        "import_rss_mb": rss,
        "report_s": limit_s["report"],
        "report_rss_mb": rss,
        "met": {
            step: result[step]["wall_s"] < limit_s[step] and result[step]["peak_rss_mb"] < rss
            for step in ("import", "report")
        },
    }


def arena(work: Path, battles: int) -> dict:
    result: dict = {"battles": battles}
    data = work / "battles.jsonl"
    if not data.exists():
        write_battles(data, battles)
    result["file_mb"] = round(data.stat().st_size / 1e6, 1)
    limits(result, work, [PARSE, str(data)], battles)
    through_cli(result, "arena", data, work / "study", [], {"import": 30, "report": 20})
    return result


def direct_assessment(work: Path, ratings: int) -> dict:
    data = work / "da.csv"
    rows = write_da(data, ratings)
    result: dict = {"ratings_asked": ratings, "csv_rows": rows, "file_mb": round(data.stat().st_size / 1e6, 1)}
    limits(result, work, [PARSE_CSV, str(data)], ratings)
    # no target of its own in issue 25: the arena's, against the in-memory report's 24 s
    through_cli(result, "dialogue-eval", data, work / "da-study", [], {"import": 30, "report": 20})
    result["in_memory_report_s_issue_25"] = 24
    return result


def spot_the_bot(work: Path, segments: int) -> dict:
    folder = work / "stb"
    copies = write_stb(folder, segments)
    files = sorted(str(f) for f in folder.iterdir())
    result: dict = {
        "segments_asked": segments,
        "copies": copies,
        "file_mb": round(sum(Path(f).stat().st_size for f in files) / 1e6, 1),
    }
    limits(result, work, [PARSE, *files], segments)
    options = ["--domain", "dailydialog"]
    through_cli(result, "spot-the-bot", folder, work / "stb-study", options, {"import": 30, "report": 20})
    result["in_memory_report_s_issue_25"] = 16
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="arena,da,stb", help="comma-separated: arena, da, stb")
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--ratings", type=int, default=100_000)
    parser.add_argument("--segments", type=int, default=100_000)
    parser.add_argument("--json", type=Path, default=HERE / "cli_scale.json")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="cli-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    result: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "cpus": os.cpu_count()}
    cases = {
        "arena": lambda: arena(work, args.battles),
        "da": lambda: direct_assessment(work, args.ratings),
        "stb": lambda: spot_the_bot(work, args.segments),
    }
    try:
        for name in args.only.split(","):
            result[name] = cases[name.strip()]()
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.json.exists():  # cases not run this time keep their last figures (each has its date)
        kept = json.loads(args.json.read_text(encoding="utf-8"))
        for name in cases:
            if name not in result and isinstance(kept.get(name), dict):
                result[name] = {"date": kept.get("date"), **kept[name]}
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
