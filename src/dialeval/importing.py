"""The work of `dialeval import`: read an outside data set, check it, and store it in a study folder
(made by the import, or an existing one with --append); the command line itself lives in cli.py.

Two paths: a format with a streamed reader goes from the file to the store in batches, so memory
does not grow with the file (_stream_import); any other, or an option that needs the whole file
(--rename, --domain, --judges, --method), reads a Dataset first (read_import, _store_import). Both
refuse the same things with the same messages, and a failed import leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

from . import registry
from .errors import DialevalError
from .terminal import console


def _parse_renames(pairs: list[str]) -> dict[str, str]:
    renames = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            raise DialevalError(f"--rename takes old=new, not {pair!r}")
        renames[old] = new
    return renames


def read_import(
    fmt: str,
    path: Path,
    domain: str | None,
    renames: dict[str, str],
    method: str | None,
    *,
    paper_names: bool = True,
    judges: list[Path] | None = None,
):
    """Read an outside data set into a Dataset (the readers and their registry live in formats/)."""
    from .formats import import_dataset
    from .textclean import clean_dataset

    if not path.exists():
        raise DialevalError(f"{path}: no such file or folder")
    dataset = import_dataset(
        fmt,
        path,
        method,
        domain=domain,
        renames=renames or None,
        paper_names=paper_names,
        judges=list(judges or []),
    )
    return clean_dataset(dataset, str(path))


def dataset_systems(dataset) -> list[str]:
    from .formats.names import dataset_system_names

    return dataset_system_names(dataset)


def _add_imported_bots(study: Path, systems: list[str], originals: dict[str, str]) -> None:
    """List systems a later import brings (model2's self-chats after model1's) among the study's bots,
    so that units are made for them too. A study file written by `dialeval import` is rewritten (it has
    no comments to lose); a hand-written one is left alone and the user told what to add."""
    import yaml

    from .config import IMPORTED_BOT, STUDY_FILE
    from .study import write_study_file

    path = study / STUDY_FILE
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    known = {b.get("name") for b in data.get("bots") or []}
    missing = [s for s in systems if s not in known]
    if not missing:
        return
    if not data.get("imported_from"):
        console.print(
            f"note: {', '.join(missing)} not among the bots of {path}; add them (type: imported) "
            "to make units for them",
            highlight=False,
        )
        return
    data["bots"] = list(data.get("bots") or []) + [
        {"name": s, "type": IMPORTED_BOT, **({"options": {"original_name": originals[s]}} if s in originals else {})}
        for s in missing
    ]
    write_study_file(study, data)
    console.print(f"added {', '.join(missing)} to the bots of {path}", highlight=False)


def _study_import(fmt: str) -> str | None:
    """The import of material into an existing study that some method names (Method.study_imports)."""
    for method in registry.all_methods().values():
        if fmt in method.study_imports:
            return method.study_imports[fmt]
    return None


def import_into_study(fmt, paths, study, domain, rename, method, paper_names, judges, max_text_chars, append) -> None:
    """`dialeval import FORMAT PATH... STUDY`: a method's own import into its study, or an outside data
    set read (streamed when the format and options allow) and stored under the study's import lock."""
    from .config import STUDY_FILE
    from .formats.names import make_names_safe

    own = _study_import(fmt)
    if own is not None:  # a method's import into an existing study of it (e.g. answers to its prompts)
        if not (study / STUDY_FILE).exists():
            raise DialevalError(f"{study}: no study here; create it first (dialeval init METHOD {study})")
        from .textclean import import_text_limit_of

        with import_text_limit_of(max_text_chars):  # the files it reads and the study's own (e.g. its prompts)
            registry.load_part(own)(study, list(paths), lambda line: console.print(line, highlight=False, markup=False))
        return
    if len(paths) != 1:
        raise DialevalError(f"import {fmt} reads one file or folder, not {len(paths)}")
    path = paths[0]
    renames = _parse_renames(rename)
    from .textclean import import_text_limit_of

    def waiting() -> None:
        console.print(f"waiting for another import into {study} to finish", highlight=False)

    from .formats import importers

    entry = importers().get(fmt)
    streamed = entry is not None and (entry.stream or entry.batches)
    if streamed and path.is_file() and not (judges or renames or domain or method):
        with import_text_limit_of(max_text_chars):
            if _stream_import(fmt, path, study, append, waiting):
                return

    from .gc_pause import cyclic_gc_paused
    from .import_sources import records_digest, study_lock

    # The whole data set's records (millions of objects, no cycles) stay alive to the end: each
    # pass of the cyclic collector walked all of them again.
    with cyclic_gc_paused():
        with import_text_limit_of(max_text_chars):
            dataset = read_import(fmt, path, domain, renames, method, paper_names=paper_names, judges=judges)
        originals = make_names_safe(dataset)
        # Imports into one study take turns: both finding the source new would store it twice.
        with study_lock(study, waiting):
            _store_import(
                fmt, path, study, domain, renames, judges, append, dataset, originals, records_digest(dataset)
            )


def _write_imported_study(study, fmt, path, domain, renames, judges, method, systems, originals) -> None:
    """The study.yaml of a study made by an import: its systems as imported bots."""
    from .config import IMPORTED_BOT
    from .study import write_study_file

    write_study_file(
        study,
        {
            "name": study.name,
            "method": method,
            "description": f"imported from {path}",
            "bots": [
                {
                    "name": s,
                    "type": IMPORTED_BOT,
                    **({"options": {"original_name": originals[s]}} if s in originals else {}),
                }
                for s in systems or ["imported"]
            ],
            "imported_from": {
                "format": fmt,
                "path": str(path.resolve()),
                "domain": domain,
                "rename": renames,
                **({"judges": [str(j.resolve()) for j in judges]} if judges else {}),
            },
        },
    )


class _NotStreamable(Exception):
    """The streamed import met what only the whole-file import handles (a name to make safe)."""


def _stream_import(fmt: str, path: Path, study: Path, append: bool, waiting) -> bool:
    """`dialeval import FORMAT FILE STUDY` of a format with a streamed reader (ImportFormat.stream,
    e.g. arena battles) and no option that needs the whole file: records go from the file to the
    store as they are read (Store.save_stream), so memory does not grow with the file (but for the
    ids kept to find repeats) and rows go in bulk. The same checks and messages as the whole-file
    import; all or nothing (a failed import leaves no study behind). False (nothing changed) when
    the file needs the whole-file import: a system name the store cannot take is renamed with
    knowledge of every other name."""
    import shutil

    from .config import STUDY_FILE, load_study
    from .errors import ImportFormatError
    from .formats import (
        LABEL_CHARS,
        batch_reader,
        check_annotator,
        check_conversation,
        check_id,
        check_question,
        format_method,
        importers,
        streamer,
    )
    from .formats.names import HUMAN, is_valid_name
    from .import_sources import (
        RecordsDigest,
        already_imported,
        refuse_other_source,
        source_digest,
        source_record,
        study_lock,
    )
    from .records import Annotator, Conversation, Turn
    from .store.store import Store
    from .study import open_study, study_uid
    from .textclean import clean_text

    where, method = str(path), format_method(fmt)
    batched = bool(importers()[fmt].batches)
    folder_existed = study.exists()
    with study_lock(study, waiting):
        # looked at under the lock: an import that held it may have made the study meanwhile
        before = set(study.iterdir())
        existed = (study / STUDY_FILE).exists()
        digest = source_digest(path)
        previous: list[dict] = []
        refusal: DialevalError | None = None
        if existed:
            opened = open_study(study)
            try:
                previous = opened.store.imported_sources(opened.id)
                earlier = already_imported(previous, fmt, digest, None, None)
                if earlier is not None:
                    _say_already_imported(path, study, earlier, digest)
                    return True
                held = opened.store.counts(opened.id)
                try:
                    refuse_other_source(study, previous, held["judgments"], held["conversations"], append)
                except DialevalError as exc:  # unless the file holds the same records (known once read)
                    refusal = exc
            finally:
                opened.close()
            held_method = load_study(study).method
            if held_method != method:
                raise refusal or DialevalError(f"{study} holds a {held_method} study; this import is {method}")
        records = RecordsDigest()
        annotators: dict[str, Annotator] = {}
        questions: set[str] = set()
        systems: dict[str, list[str]] = {"conversations": [], "judgments": []}
        seen_systems: dict[str, set[str]] = {k: set() for k in systems}

        def system(name: str, kind: str) -> None:
            if name not in seen_systems[kind]:
                if not is_valid_name(name):
                    raise _NotStreamable
                seen_systems[kind].add(name)
                systems[kind].append(name)

        judged, add_judgment = seen_systems["judgments"], records.adder("judgments")

        def judgment_systems(judgment) -> None:
            # the systems a judgment names (formats/names.py reads the same keys); a name seen
            # before needs nothing
            value = judgment.value if isinstance(judgment.value, dict) else {}
            for key in ("model_a", "model_b"):
                name = value.get(key)
                if name not in judged and isinstance(name, str) and name and name != HUMAN:
                    system(name, "judgments")

        shown = seen_systems["conversations"]

        def items():
            for annotator, judgment, conversations in streamer(fmt)(path):
                if annotator.id not in annotators:
                    check_annotator(annotator.id, where, annotators)
                    annotators[annotator.id] = annotator
                if judgment.question not in questions:
                    check_question(judgment.question, where)
                    questions.add(judgment.question)
                for conv in conversations:
                    check_id("conversation", conv.id, where)
                    check_conversation(conv, where)
                    for turn in conv.turns:
                        turn.text = clean_text(turn.text)
                    system(conv.bots[0], "conversations")
                    records.add("conversations", conv)
                judgment_systems(judgment)  # its texts were cleaned with the record (clean_imported)
                add_judgment(judgment)
                yield annotator, judgment, conversations

        summary: dict = {}

        def batches():
            # the checks of check_records, a batch at a time; a batch reader's texts are cleaned
            # already (ImportFormat.batches)
            stream = batch_reader(fmt)(path)
            ids: dict[str, set[str]] = {"conversation": set(), "unit": set()}
            add_conversation, add_unit = records.conversation_adder(), records.adder("units")
            for batch in stream:
                for conv, turns in zip(batch.conversations, batch.turns, strict=True):
                    check_id("conversation", conv.id, where)
                    if conv.id in ids["conversation"]:
                        raise ImportFormatError(where, f"conversation id {conv.id!r} appears twice; ids must be unique")
                    ids["conversation"].add(conv.id)
                    if len(conv.source) > LABEL_CHARS or any(len(t[0]) > LABEL_CHARS for t in turns):
                        check_conversation(
                            Conversation(conv.id, conv.bots, [Turn(*t) for t in turns], conv.source), where
                        )
                    for name in conv.bots:
                        if name not in shown and isinstance(name, str) and name and name != HUMAN:
                            system(name, "conversations")
                    add_conversation(conv, turns)
                for unit in batch.units:
                    check_id("unit", unit.id, where)
                    if unit.id in ids["unit"]:
                        raise ImportFormatError(where, f"unit id {unit.id!r} appears twice; ids must be unique")
                    ids["unit"].add(unit.id)
                    add_unit(unit)
                for annotator in batch.annotators:
                    check_annotator(annotator.id, where, annotators)
                    annotators[annotator.id] = annotator
                for judgment in batch.judgments:
                    if judgment.question not in questions:
                        check_question(judgment.question, where)
                        questions.add(judgment.question)
                    judgment_systems(judgment)
                    add_judgment(judgment)
                yield batch
            summary.update(stream.meta())

        def finish(counts: dict[str, int]) -> dict | None:
            for annotator in annotators.values():
                records.add("annotators", annotator)
            digest_of_records = records.hexdigest()
            earlier = already_imported(previous, fmt, digest, None, digest_of_records)
            if earlier is not None:
                _say_already_imported(path, study, earlier, digest)
                return None
            if refusal is not None:
                raise refusal
            return source_record(
                fmt, path, digest, domain=None, rename=None, judges=None, records_sha256=digest_of_records
            )

        try:
            if not existed:  # rewritten with the systems once the battles are in
                _write_imported_study(study, fmt, path, None, {}, [], method, [], {})
            if batched:
                # the study's bots are registered once they are known (after the data, as
                # open_study does; the whole-file import's rows): not the placeholder
                config = load_study(study)
                store = Store.for_study_dir(study, config.database)
                try:
                    row = store.ensure_study(config.name, method, config.model_dump(mode="json"), uid=study_uid(study))
                    counts = store.save_batches(row.id, batches(), finish)
                finally:
                    store.close()
            else:
                opened = open_study(study)
                try:
                    counts = opened.store.save_stream(opened.id, items(), finish)
                finally:
                    opened.close()
        except BaseException as exc:
            if not existed:  # nothing of a failed import stays behind
                for entry in set(study.iterdir()) - before:
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink(missing_ok=True)
                if not folder_existed:
                    shutil.rmtree(study, ignore_errors=True)
            if isinstance(exc, _NotStreamable):
                return False
            raise
        if counts is None:
            return True
        names = systems["conversations"] + [n for n in systems["judgments"] if n not in seen_systems["conversations"]]
        if existed:
            _add_imported_bots(study, names, {})
        else:
            _write_imported_study(study, fmt, path, None, {}, [], method, names, {})
        if batched:  # the study row's config and its bots as study.yaml now says
            open_study(study).close()
    console.print(f"imported into {study}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    _say_submissions(summary)
    return True


def _store_import(fmt, path, study, domain, renames, judges, append, dataset, originals, records) -> None:
    from .config import STUDY_FILE, load_study
    from .import_sources import already_imported, refuse_other_source, source_digest, source_record
    from .study import open_study

    # Idempotent: the same content again changes nothing (not even study.yaml); another source needs --append.
    digest = source_digest(path, *judges)
    if (study / STUDY_FILE).exists():
        opened = open_study(study)
        try:
            previous = opened.store.imported_sources(opened.id)
            earlier = already_imported(previous, fmt, digest, domain, records)
            if earlier is not None:
                _say_already_imported(path, study, earlier, digest)
                return
            held = opened.store.counts(opened.id)
            refuse_other_source(study, previous, held["judgments"], held["conversations"], append)
        finally:
            opened.close()
        existing = load_study(study)
        if existing.method != dataset.method:
            raise DialevalError(f"{study} holds a {existing.method} study; this import is {dataset.method}")
        _add_imported_bots(study, dataset_systems(dataset), originals)
    else:
        _write_imported_study(
            study, fmt, path, domain, renames, judges, dataset.method, dataset_systems(dataset), originals
        )
    opened = open_study(study)
    try:
        source = source_record(
            fmt,
            path,
            digest,
            domain=domain,
            rename=renames or None,
            judges=[str(j.resolve()) for j in judges] or None,
            records_sha256=records,
        )
        counts = opened.store.save_dataset(opened.id, dataset, source=source)
    finally:
        opened.close()
    for new, old in originals.items():
        console.print(f"renamed system {old!r} to {new!r} (a name the store can take)", highlight=False)
    console.print(f"imported into {study}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    _say_submissions(dataset.meta)


def _say_already_imported(path: Path, study: Path, earlier: dict, digest: str) -> None:
    """An import that changes nothing: the same file, or the same records in another encoding."""
    same = "content" if earlier.get("sha256") == digest else "records in another encoding or line ending"
    console.print(
        f"{path} was already imported into {study} ({earlier.get('at', 'earlier')}, same {same}, "
        f"sha256 {digest[:12]}); nothing changed"
    )


def _say_submissions(meta: dict) -> None:
    """The MTurk submissions an import kept without ratings (a Dataset's meta, e.g. Dialogue-Eval's)."""
    for key, what in (("empty_submissions", "empty"), ("partial_submissions", "partial")):
        if meta.get(key):
            console.print(
                f"{len(meta[key])} {what} submissions kept without their missing ratings: " + ", ".join(meta[key]),
                highlight=False,
            )
