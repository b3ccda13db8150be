"""dialeval as users get it: build the sdist and the wheel, check their metadata, install the wheel
into a fresh virtual environment outside the checkout and run the CLI from there.

    python scripts/check_wheel.py [--keep]      (run by `make test`; --keep leaves the folder)

Steps: `python -m build` on a copy of the checkout (the wheel is built from the sdist, so a file missing from the sdist
fails here; no build isolation: the setuptools of the test extra builds it, offline), `twine check
--strict`, a fresh venv in a temporary folder, the wheel installed into it by pip, then from a
temporary working folder, with no PYTHONPATH: `dialeval --version` (must be the wheel's version),
`dialeval init METHOD DIR` for every registered method, `dialeval demo --simulate 8 --no-serve` (under
scripts/run_tests.py into the folder where the test suite reads its completed demo: simulated_demo).

Cost: the fresh venv does not download or reinstall the dependencies. A .pth file puts a folder of
links to this environment's installed distributions on its path (dialeval's own left out), so pip
finds every requirement of the wheel already satisfied (`--no-index`: nothing is fetched; a
requirement missing here fails the install) and installs only the wheel itself, normally. The check
asserts that `dialeval` is imported from the fresh venv's site-packages, not from src/.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import venv
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# what the copy of the checkout leaves out: environments, caches, build output, git, local data
# the simulated annotators of the demo this check runs: tests/conftest.py's COMPLETED_DEMO_ANNOTATORS,
# as the suite reads the demo made here (simulated_demo)
COMPLETED_DEMO_ANNOTATORS = 8
NOT_SOURCES = (
    ".git",
    ".venv",
    "node_modules",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "*.egg-info",
    "build",
    "dist",
    "*.db",
    "*.db-wal",
    "*.db-shm",
)


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 600) -> str:
    t = time.monotonic()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    shown = " ".join(str(c) for c in cmd)
    print(f"check_wheel: {shown}  ({time.monotonic() - t:.1f} s)", flush=True)
    if result.returncode != 0:
        raise SystemExit(f"check_wheel: FAILED ({result.returncode}): {shown}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def dependency_links(target: Path) -> None:
    """Links in `target` to every entry of this environment's site-packages but dialeval's own
    (its package, dist-info, editable-install files) and the .pth files."""
    target.mkdir()
    paths = sysconfig.get_paths()
    for site in {Path(paths["purelib"]).resolve(), Path(paths["platlib"]).resolve()}:
        for entry in site.iterdir():
            name = entry.name.lower()
            if name.startswith(("dialeval", "__editable__", "_dialeval")) or name.endswith(".pth"):
                continue
            if not (target / entry.name).exists():
                (target / entry.name).symlink_to(entry)


def simulated_demo(cli: str, work: Path, env: dict[str, str]) -> Path:
    """`dialeval demo --simulate 8 --no-serve` by the installed command; the folder it made.

    Under scripts/run_tests.py (DIALEVAL_TEST_SHARED set) the demo goes where the test suite's
    `completed_demo` (tests/conftest.py) looks for it, under the same file lock, so the suite reads
    this one instead of running the same two-minute command a second time; if a test part made it
    first, this check runs its own in its working folder. Alone, the demo goes there too."""
    command = [cli, "demo", "--simulate", str(COMPLETED_DEMO_ANNOTATORS), "--no-serve", "--out"]
    shared = os.environ.get("DIALEVAL_TEST_SHARED")
    if shared:
        root = Path(shared)
        root.mkdir(parents=True, exist_ok=True)
        out, done = root / "completed-demo", root / "completed-demo.done"
        with (root / "completed-demo.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
            if not done.exists():
                shutil.rmtree(out, ignore_errors=True)  # a run that died half-way
                made = run([*command, str(out)], cwd=work, env=env, timeout=900)
                done.write_text(made, encoding="utf-8")
                return out
    run([*command, "demo"], cwd=work, env=env, timeout=900)
    return work / "demo"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="dialeval-wheel-"))
    try:
        dist = tmp / "dist"
        # Built from a copy of the checkout: setuptools writes src/dialeval.egg-info while it makes the
        # sdist, and the tests that run beside this check (scripts/run_tests.py) import dialeval from
        # src/, where a second copy of its metadata would register every method twice.
        source = tmp / "source"
        shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*NOT_SOURCES), symlinks=True)
        run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)], cwd=tmp)
        wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
        assert len(wheels) == 1 and len(sdists) == 1, sorted(dist.iterdir())
        wheel = wheels[0]
        run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdists[0])], cwd=tmp)
        with zipfile.ZipFile(wheel) as zf:
            meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            headers = zf.read(meta).decode()
            assert "License-Expression: MIT" in headers and any(n.endswith("licenses/LICENSE") for n in zf.namelist())
            requires = [line for line in headers.splitlines() if line.startswith("Requires-Dist:")]
            assert not [r for r in requires if "krippendorff" in r], "the GPL krippendorff package is required again"
        version = wheel.name.split("-")[1]

        env_dir = tmp / "venv"
        venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
        python = env_dir / "bin" / "python"
        fresh_site = Path(
            run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp).strip()
        )
        dependency_links(tmp / "deps")
        (fresh_site / "dialeval-check-deps.pth").write_text(str(tmp / "deps") + "\n")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        env["DIALEVAL_CACHE_DIR"] = str(tmp / "cache")  # a user's first run: no cache, and none left behind
        pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
        run([*pip, "install", "--no-index", "--quiet", str(wheel)], cwd=tmp, env=env)

        work = tmp / "work"
        work.mkdir()
        where = run([str(python), "-c", "import dialeval; print(dialeval.__file__)"], cwd=work, env=env).strip()
        assert Path(where).is_relative_to(fresh_site), f"dialeval imported from {where}, not from the wheel"
        cli = str(env_dir / "bin" / "dialeval")
        out = run([cli, "--version"], cwd=work, env=env).strip()
        assert out == f"dialeval {version}", f"dialeval --version printed {out!r}, the wheel is {version}"
        methods = run(
            [str(python), "-c", "from dialeval.registry import ids; print(' '.join(ids()))"], cwd=work, env=env
        ).split()
        assert methods, "no method registered in the installed wheel"
        for method in methods:
            run([cli, "init", method, f"study-{method}"], cwd=work, env=env)
            assert (work / f"study-{method}" / "study.yaml").is_file(), method
        demo = simulated_demo(cli, work, env)
        reports = sorted(p.parent.parent.name for p in demo.glob("*/report/index.html"))
        assert reports == sorted(methods), f"demo reports for {reports}, methods {methods}"
        print(
            f"check_wheel: ok: {wheel.name} installed outside the checkout; --version, init x {len(methods)}"
            f" and the simulated demo ran ({time.monotonic() - started:.0f} s)"
        )
        return 0
    finally:
        if args.keep:
            print(f"check_wheel: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
