"""Study files are safe to share: whatever a study file holds, dialeval answers with a clear message
or a valid study, never a traceback, a hang, a memory blow-up or code run on its behalf.

The failure classes found by hand go through the CLI as a user runs it (`dialeval report`,
`generate`, `serve` in a subprocess); then a property-based fuzz (Hypothesis) mutates the
`dialeval init` template of every method, as data and as bytes.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dialeval import METHODS, registry
from dialeval.config import StudyConfig, load_study
from dialeval.errors import StudyFileError

DIALEVAL = str(Path(sys.executable).with_name("dialeval"))
BOTS = "bots: [{name: a, type: repeat}, {name: b, type: eliza}]\n"
HEAD = "name: shared\nmethod: acute\n"


def template(method: str) -> str:
    package, _, name = registry.get(method).study_template.partition(":")
    return resources.files(package).joinpath(name).read_text(encoding="utf-8")


def billion_laughs(where: str) -> str:
    lines = ['  a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"  {name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    if where == "bot":
        return (
            HEAD
            + "bots:\n  - name: a\n    type: repeat\n    options:\n"
            + "\n".join("  " + line for line in lines)
            + "\n  - {name: b, type: eliza}\n"
        )
    return HEAD + BOTS + "imported_from:\n" + "\n".join(lines) + "\n"


# (name, file bytes, command, what the message must say): each failure class that was a
# traceback or a hang, through the command that showed it
BAD_STUDIES = [
    ("bomb-imported", billion_laughs("imported").encode(), "report", "aliases"),
    ("bomb-bot-options", billion_laughs("bot").encode(), "generate", "aliases"),
    ("bomb-serve", billion_laughs("imported").encode(), "serve", "aliases"),
    ("latin-1", (HEAD + BOTS + "description: caf\xe9\n").encode("latin-1"), "report", "not UTF-8"),
    ("utf-16", (HEAD + BOTS).encode("utf-16"), "serve", "UTF-16"),
    ("deep-list", (HEAD + BOTS + "description: " + "[" * 10_000 + "]" * 10_000 + "\n").encode(), "generate", "nest"),
    ("expire-inf", (HEAD + BOTS + "annotation: {expire_minutes: .inf}\n").encode(), "serve", "expire_minutes"),
    ("words-1e9", (HEAD + BOTS + "annotation: {min_justification_words: 1000000000}\n").encode(), "serve", "words"),
    ("10000-bots", (HEAD + "bots:\n" + "  - {name: b, type: repeat}\n" * 10_000).encode(), "report", "bots"),
]
# more of the same kinds, read in-process (each subprocess costs a second of start-up)
MORE_BAD_STUDIES = [
    ("deep-list-500", (HEAD + BOTS + "imported_from: {x: " + "[" * 500 + "]" * 500 + "}\n").encode(), "nested"),
    ("nan-option", (HEAD + "bots: [{name: a, type: repeat, options: {x: .nan}}]\n").encode(), "bots[0].options.x"),
    ("huge-int", (HEAD + BOTS + "seed: " + "9" * 5000 + "\n").encode(), "digits"),
    ("python-tag", (HEAD + BOTS + 'description: !!python/object/apply:os.system ["touch PWNED"]\n').encode(), "tag"),
    ("unknown-tag", (HEAD + BOTS + "description: !secret x\n").encode(), "tag"),
    ("weak-bot", (HEAD + BOTS + "protocol: {onboarding_weak_bot: nobody}\n").encode(), "onboarding_weak_bot"),
    ("binary", b"\x00\x01\x02\xff" * 100, "not UTF-8"),
    ("big-file", (HEAD + BOTS + "description: '" + "x" * 5_000_000 + "'\n").encode(), "larger than"),
    (
        "pairs",
        (HEAD + "bots:\n" + "".join(f"  - {{name: b{i}, type: repeat}}\n" for i in range(500))).encode(),
        "pairs",
    ),
    ("planned", (HEAD + BOTS + "generation: {mode: bot-bot, conversations: 2000000}\n").encode(), "conversations"),
    ("many-questions", (HEAD + BOTS + "questions:\n" + "  - {id: q, text: t}\n" * 500).encode(), "questions"),
]


def run_cli(folder: Path, command: str) -> tuple[subprocess.CompletedProcess, float]:
    args = [DIALEVAL, command, str(folder)] + (["--port", "0"] if command == "serve" else [])
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=folder, env={**os.environ})
    return done, time.perf_counter() - t0


def test_bad_study_files_give_one_message_through_the_cli(tmp_path):
    def one(case):
        name, data, command, expected = case
        folder = tmp_path / name
        folder.mkdir()
        (folder / "study.yaml").write_bytes(data)
        done, seconds = run_cli(folder, command)
        return name, command, done, seconds, expected, folder

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, BAD_STUDIES))
    for name, command, done, seconds, expected, folder in results:
        out = done.stdout + done.stderr
        assert done.returncode != 0, (name, out)
        assert "Traceback" not in out, (name, out)
        assert expected in out and "study.yaml" in out, (name, command, out)
        assert len(out.strip().splitlines()) <= 4, (name, out)  # a message, not a dump
        assert seconds < 60, (name, seconds)
        assert not (folder / "PWNED").exists()
        assert not (folder / "dialeval.db").exists(), name  # refused before anything was made


@pytest.mark.parametrize("name,data,expected", MORE_BAD_STUDIES, ids=[c[0] for c in MORE_BAD_STUDIES])
def test_more_bad_study_files_give_one_message(tmp_path, name, data, expected):
    (tmp_path / "study.yaml").write_bytes(data)
    with pytest.raises(StudyFileError) as info:
        load_study(tmp_path)
    assert expected in str(info.value) and str(tmp_path / "study.yaml") in str(info.value)
    assert not (tmp_path / "PWNED").exists()


def test_a_database_in_missing_folders_is_refused_and_no_folder_is_made(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    target = tmp_path / "no" / "such" / "x.db"
    (folder / "study.yaml").write_text(HEAD + BOTS + f"database: sqlite:///{target}\n", encoding="utf-8")
    done, _ = run_cli(folder, "report")
    assert done.returncode != 0 and "does not exist" in done.stderr + done.stdout
    assert not (tmp_path / "no").exists()


def test_the_yaml_bomb_is_refused_at_once(tmp_path):
    for where in ("imported", "bot"):
        path = tmp_path / f"{where}.yaml"
        path.write_text(billion_laughs(where), encoding="utf-8")
        t0 = time.perf_counter()
        with pytest.raises(StudyFileError, match="aliases"):
            load_study(path)
        # a guard against the expansion (minutes and gigabytes without it), not a speed target:
        # generous for a CI machine running two test processes
        assert time.perf_counter() - t0 < 10.0
    # a study file that uses an anchor or two, as people do, still reads
    path = tmp_path / "anchors.yaml"
    path.write_text(
        HEAD
        + "bots:\n  - {name: a, type: repeat, options: &o {mode: echo}}\n  - {name: b, type: repeat, options: *o}\n",
        encoding="utf-8",
    )
    assert load_study(path).bots[1].options == {"mode": "echo"}


def test_many_bots_start_fast_or_get_a_fast_message(tmp_path):
    for n, ok in ((300, True), (10_000, False)):
        folder = tmp_path / f"bots{n}"
        folder.mkdir()
        lines = [HEAD.strip(), "bots:"] + [f"  - {{name: bot{i}, type: repeat}}" for i in range(n)]
        (folder / "study.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        t0 = time.perf_counter()
        if ok:
            assert len(load_study(folder).bots) == n
        else:
            with pytest.raises(StudyFileError, match="bots"):
                load_study(folder)
        assert time.perf_counter() - t0 < 10  # it was minutes (list.count per bot)


# -- property-based: mutations of every method's `dialeval init` template ------------------------------

HOSTILE = [
    None,
    True,
    -1,
    0,
    2**63,
    -(2**64),
    10**30,
    1e308,
    float("inf"),
    float("nan"),
    "",
    "x" * 10_000,
    "\u0000",
    "../../etc/passwd",
    [],
    {},
    [1, 2],
    {"a": {"b": [None]}},
    "1e9",
    "yes",
    3.5,
]


def paths_of(data, prefix=()):
    """Every (path) to a value of a parsed study file."""
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out.extend(paths_of(v, (*prefix, k)))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out.extend(paths_of(v, (*prefix, i)))
    return out


def set_at(data, path, value):
    if not path:
        return value
    target = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return data


@st.composite
def mutated_study(draw) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(["value", "delete", "unknown", "bytes", "truncate", "encoding", "nest", "alias"]))
    return kind, draw(mutation(kind))


@st.composite
def mutation(draw, kind: str) -> bytes:
    method = draw(st.sampled_from(METHODS))
    text = template(method)
    rng = random.Random(draw(st.integers(0, 2**32)))
    if kind in ("value", "delete", "unknown"):
        data = yaml.safe_load(text)
        path = rng.choice(paths_of(data)[1:])
        if kind == "value":
            data = set_at(data, path, rng.choice(HOSTILE) if rng.random() < 0.8 else draw(st.from_type(type(None))))
        elif kind == "delete":
            parent = data
            for part in path[:-1]:
                parent = parent[part]
            del parent[path[-1]]
        else:
            parent = data
            for part in path[:-1]:
                parent = parent[part]
            if isinstance(parent, dict):
                parent[draw(st.text(min_size=1, max_size=8))] = rng.choice(HOSTILE)
        try:
            return yaml.safe_dump(data, allow_unicode=True).encode("utf-8", "surrogatepass")
        except (yaml.YAMLError, UnicodeEncodeError):
            return text.encode()
    raw = bytearray(text.encode())
    if kind == "bytes":
        for _ in range(draw(st.integers(1, 20))):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        return bytes(raw)
    if kind == "truncate":
        return bytes(raw[: rng.randrange(len(raw))])
    if kind == "encoding":
        return text.encode(rng.choice(["utf-16", "utf-16-le", "utf-32", "latin-1", "cp1252"]), "replace")
    if kind == "nest":
        depth = draw(st.sampled_from([50, 65, 200, 999, 5000]))
        return text.encode() + f"\nimported_from: {{x: {'[' * depth}{']' * depth}}}\n".encode()
    # alias: a growing chain of anchors somewhere in the file
    levels, width = draw(st.integers(2, 9)), draw(st.integers(2, 12))
    lines = ["imported_from:", "  l0: &l0 [x, x]"]
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return text.encode() + ("\n" + "\n".join(lines) + "\n").encode()


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(mutated_study())
def test_any_mutated_template_is_a_clear_error_or_a_valid_study(tmp_path_factory, case):
    kind, data = case
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "study.yaml").write_bytes(data)
    t0 = time.perf_counter()
    try:
        config = load_study(folder)
    except StudyFileError as exc:
        message = str(exc)
        assert message.startswith(str(folder / "study.yaml")) and "Traceback" not in message
        event(f"{kind}: a message")
    else:
        event(f"{kind}: a valid study")
        assert isinstance(config, StudyConfig)
        config.model_dump(mode="json")  # what open_study stores
        assert config.options is not None
    assert time.perf_counter() - t0 < 20.0  # no mutation may hang the reader (a guard, not a speed target)
    assert not list(folder.glob("*.db"))
