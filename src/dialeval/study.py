"""A study is a folder: study.yaml, its database (dialeval.db by default), generated files, reports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from .config import STUDY_FILE, StudyConfig, load_study, parse_study
from .store import Store
from .store.schema import Study


@dataclass
class OpenStudy:
    folder: Path
    config: StudyConfig
    store: Store
    row: Study

    @property
    def id(self) -> int:
        return self.row.id

    def close(self) -> None:
        self.store.close()


def open_study(path: str | Path) -> OpenStudy:
    """Load the study file, open (and migrate) its database, and register the study and its bots."""
    config = load_study(path)
    folder = Path(path) if Path(path).is_dir() else Path(path).parent
    store = Store.for_study_dir(folder, config.database)
    row = store.ensure_study(config.name, config.method, config.model_dump(mode="json"), uid=study_uid(folder))
    for bot in config.bots:
        store.upsert_bot(row.id, bot.name, bot.type, bot.options)
    return OpenStudy(folder=folder, config=config, store=store, row=row)


def no_tasks_reason(store: Store, study_id: int, config: StudyConfig, folder: str | Path) -> str | None:
    """Why a study whose tasks are made before collection (not a live chat) has none to give, once its
    units are built (Protocol.prepare); None when it has some, or makes them as people chat. Without
    one an annotator -- a paid one too -- consents, reads the instructions and then finds nothing to
    do, so `serve` warns and `simulate` stops before the crowd."""
    from . import registry
    from .store import work

    method = registry.get(config.method)
    if method.live or method.protocol is None or work.count_units(store, study_id) > 0:
        return None
    material = "the conversations it shows" if method.generate is None else "its systems' answers, two systems at least"
    return (
        f"{folder} has no task to give annotators yet: {method.title} needs {material}, made before the "
        f"study starts, and it has none. Make them with `dialeval generate {folder}`, or bring them with "
        "`dialeval import` (dialeval import --help)"
    )


STUDY_ID_FILE = ".study-id"


def study_uid(folder: Path) -> str:
    """The folder's stable study id (made on first open): the study keeps its data when `name:` changes."""
    import uuid

    path = Path(folder) / STUDY_ID_FILE
    try:
        value = path.read_text(encoding="utf-8").strip()
        if value:
            return value
    except FileNotFoundError:
        pass
    value = uuid.uuid4().hex
    path.write_text(value + "\n", encoding="utf-8")
    return value


def write_study_file(folder: str | Path, data: dict) -> StudyConfig:
    """Validate and write a study.yaml (used by imports, which make a study folder from a data set)."""
    folder = Path(folder)
    config = parse_study(data, folder / STUDY_FILE)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STUDY_FILE).write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return config
