"""The licences of everything dialeval installs, per part: the base install and each extra.

    python scripts/check_licences.py [--pyproject PATH]      (run by `make test`)

Which distributions belong to a part is resolved from the requirements in pyproject.toml (what the
wheel declares), walking each requirement's own Requires-Dist through importlib.metadata in this
environment, with environment markers and requested extras (psycopg[binary]) evaluated; an extra's
part is what it adds beyond the base. The licence of each is what pip-licenses reads (License-
Expression, else the licence classifiers, else the License field).

Fails (exit 1) when the base install holds a GPL-family licence (GPL, AGPL or LGPL) or a base
distribution is missing, and when an extra users install (all but `test` and `crosscheck`, which
are for developers) holds a GPL or AGPL one; LGPL is allowed there (psycopg, in `postgres`, is
LGPL-3.0: dialeval only calls it, as a library). A licence passes when one of its SPDX `OR`
alternatives is free of the GPL family; several classifiers (pip-licenses joins them with "; ")
count as all applying.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tomllib
from collections import Counter
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
DEVELOPER_EXTRAS = {"test", "crosscheck"}  # never installed by users: listed, not judged
_WEAK = re.compile(r"LGPL|Lesser General Public|Library General Public", re.IGNORECASE)
_STRONG = re.compile(r"GPL|General Public License|Affero", re.IGNORECASE)


def copyleft(licence: str) -> str | None:
    """'strong' (GPL, AGPL), 'weak' (LGPL) or None (no GPL-family licence binds the user).

    >>> copyleft("GPL-3.0-or-later"), copyleft("LGPL-3.0-only"), copyleft("MIT OR GPL-2.0-only")
    ('strong', 'weak', None)
    >>> copyleft("GNU Affero General Public License v3"), copyleft("BSD License; GNU General Public License (GPL)")
    ('strong', 'strong')
    """
    kinds = []
    for alternative in re.split(r"\s+OR\s+", licence):
        if _STRONG.search(_WEAK.sub("", alternative)):
            kinds.append("strong")
        elif _WEAK.search(alternative):
            kinds.append("weak")
        else:
            return None
    return "weak" if "weak" in kinds else "strong"


def closure(requirements: list[Requirement], extra: str = "") -> tuple[set[str], set[str]]:
    """The installed distributions `requirements` pull in (canonical names), and the missing ones."""
    found: set[str] = set()
    missing: set[str] = set()
    todo = [(r, extra) for r in requirements]
    seen: set[tuple[str, str]] = set()
    while todo:
        req, context = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": context}):
            continue
        name = canonicalize_name(req.name)
        extras = sorted(req.extras) or [""]
        if all((name, e) in seen for e in extras):
            continue
        seen.update((name, e) for e in extras)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.add(name)
            continue
        found.add(name)
        for line in dist.requires or []:
            for e in extras:
                todo.append((Requirement(line), e))
    return found, missing


def licences() -> dict[str, tuple[str, str]]:
    """Canonical name -> (version, licence) of every distribution in this environment (pip-licenses)."""
    out = subprocess.run(
        [sys.executable, "-m", "piplicenses", "--format=json", "--with-system", "--from=mixed"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {canonicalize_name(d["Name"]): (d["Version"], d["License"]) for d in json.loads(out)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyproject", type=Path, default=REPO / "pyproject.toml")
    args = parser.parse_args(argv)
    project = tomllib.loads(args.pyproject.read_text(encoding="utf-8"))["project"]
    own = canonicalize_name(project["name"])
    known = licences()
    problems: list[str] = []

    base, base_missing = closure([Requirement(r) for r in project.get("dependencies", [])])
    parts = {"base": (base - {own}, base_missing)}
    for extra, reqs in project.get("optional-dependencies", {}).items():
        found, missing = closure([Requirement(r) for r in reqs])
        parts[extra] = (found - base - {own}, missing)

    for part, (names, missing) in parts.items():
        counts = Counter(known[n][1] for n in names)
        print(f"== {part}: {len(names)} distributions" + (f", {len(missing)} not installed" if missing else ""))
        for licence, count in counts.most_common():
            print(f"   {count:4d}  {licence}")
        for name in sorted(names):
            version, licence = known[name]
            kind = copyleft(licence)
            if kind:
                print(f"   {kind} copyleft: {name} {version} ({licence})")
            if part == "base" and kind:
                problems.append(f"base install: {name} {version} is {licence}")
            elif part not in DEVELOPER_EXTRAS and kind == "strong":
                problems.append(f"extra {part!r}: {name} {version} is {licence}")
        if missing:
            print(f"   not installed: {', '.join(sorted(missing))}")
            if part == "base":
                problems.append(f"base install: not installed, licence unknown: {', '.join(sorted(missing))}")
    for problem in problems:
        print(f"check_licences: {problem}", file=sys.stderr)
    print("check_licences: " + ("FAILED" if problems else "ok: no GPL-family licence in the base install"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
