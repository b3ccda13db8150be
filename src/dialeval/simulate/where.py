"""Where `dialeval simulate` writes: never silently beside real annotators.

A study without real annotators (a new study, the demo) is simulated in place: its annotators are
then all simulated and its report says so. A study with real annotators is refused unless told
where: a copy (`copy_for_simulation`: the study as prepared, without any annotator's data) or,
knowingly, the study itself. Simulated annotators carry the platform `simulated` either way, so
reports and approvals leave them out beside real ones.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import DialevalError
from ..records import JUDGE_PLATFORM, SIMULATED_PLATFORM

COPY_MARK = ".simulated-copy"  # names the study a folder was copied from (a copy may be simulated again)
# What a copy leaves behind: the database, the secrets and id of the study, its reports and truth
_NOT_COPIED = ("*.db", "*.db-*", "*.lock", ".secret", ".admin-token", ".study-id", "report", "simulation", COPY_MARK)


def real_annotators(folder: Path) -> int:
    """Annotators of the study who are people (neither simulated nor an LLM judge)."""
    from ..store import work
    from ..study import open_study

    opened = open_study(folder)
    try:
        rows = work.list_annotators(opened.store, opened.id)
    finally:
        opened.close()
    return sum(1 for r in rows if r["platform"] not in (SIMULATED_PLATFORM, JUDGE_PLATFORM, "llm-judge"))


def study_folder(path: Path) -> Path:
    """A study folder or its study.yaml -> the folder."""
    return path if path.is_dir() or path.suffix not in (".yaml", ".yml") else path.parent


def copy_for_simulation(source: Path, dest: Path) -> bool:
    """Make `dest` a copy of the study `source` as prepared (study file, its other files, the
    conversations made before collection; no annotator, live chat or judgment), in its own SQLite
    database. An earlier copy of the same study is reused. True when a new copy was made."""
    from ..config import STUDY_FILE, load_study
    from ..store.engine import DATABASE_URL_ENV, database_url
    from ..store.transfer import copy_between, study_uid_in
    from ..study import STUDY_ID_FILE, open_study

    source, dest = study_folder(source).resolve(), dest.resolve()
    if dest == source:
        raise DialevalError(f"--copy {dest} is the study itself; name another folder, or use --into-study")
    if (dest / COPY_MARK).exists():
        return False
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise DialevalError(f"--copy {dest} exists and is not a simulated copy; name a new or empty folder")
    open_study(source).close()  # the study row exists (a study never served or generated has none yet)
    config = load_study(source)
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(*_NOT_COPIED), dirs_exist_ok=True)
    path = dest / STUDY_FILE
    # a line edit keeps the file's comments; the copy has a database of its own
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("database:")]
    if os.environ.get(DATABASE_URL_ENV):  # else the copy would share the environment's database
        lines.append(f"database: sqlite:///{dest / 'dialeval.db'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from_url = database_url(source, config.database)
    to_url = database_url(dest, load_study(dest).database)
    copy_between(from_url, to_url, config.name, prepared_only=True)
    uid = study_uid_in(to_url, config.name)
    if uid:
        (dest / STUDY_ID_FILE).write_text(uid + "\n", encoding="utf-8")
    (dest / COPY_MARK).write_text(f"a copy of {source} for dialeval simulate\n", encoding="utf-8")
    return True
