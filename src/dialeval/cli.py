"""The `dialeval` command: one verb per job. User errors print a message, never a traceback."""

from __future__ import annotations

import contextlib
import functools
import math
import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from . import registry
from .errors import DialevalError
from .formats import importers
from .gc_pause import cyclic_gc_paused
from .terminal import console, err_console

if TYPE_CHECKING:
    from rich.progress import Progress

app = typer.Typer(
    name="dialeval",
    help="Human evaluation of chatbots: make conversations, collect judgments, report the statistics.",
    epilog="Exit codes: 0 done; 2 something you can fix (bad input, unreachable bot, a file that cannot be read "
    "or written, nothing to report), printed as one 'error:' line; 1 a bug.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _spearman_text(rho: float | None) -> str:
    """The demo table's recovery cell for people: two decimals, never a 16-digit float."""
    return "spearman n/a" if rho is None else f"spearman {rho:.2f}"


def fail(message: str) -> typer.Exit:
    """Print one `error:` line and return the exit (code 2: something the user can fix)."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(2)


def os_error_message(exc: OSError) -> str:
    """'PATH: Permission denied' rather than a traceback; the path is the one the user named."""
    what = exc.strerror or exc.__class__.__name__
    where = exc.filename if exc.filename is not None else None
    return f"{where}: {what}" if where else what


def friendly(fn):
    """Exit codes of the README: user errors (DialevalError) and OS errors (a missing file, a folder
    that cannot be written, a full disk) print one line and exit 2; a bug keeps its traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DialevalError as exc:
            raise fail(str(exc)) from None
        except OSError as exc:
            raise fail(os_error_message(exc)) from None

    return wrapper


def _hide_flag_types() -> None:
    """typer >= 0.16 prints '<bool>' beside every flag in --help; a flag takes no value, so show none."""
    try:
        from typer.core import TyperOption
    except ImportError:  # pragma: no cover - an older typer prints no types
        return
    original = getattr(TyperOption, "display_type_rich", None)
    if original is None or getattr(original, "_dialeval", False):
        return

    def display_type_rich(self, ctx):
        return None if getattr(self, "is_flag", False) else original(self, ctx)

    setattr(display_type_rich, "_dialeval", True)  # noqa: B010  (marks the patch: applied once)
    setattr(TyperOption, "display_type_rich", display_type_rich)  # noqa: B010


_hide_flag_types()


def _version(value: bool) -> None:
    if value:
        from . import __version__

        console.print(f"dialeval {__version__}", highlight=False)
        raise typer.Exit(0)


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="print the version"),
) -> None:
    """Human evaluation of chatbots: make conversations, collect judgments, report the statistics.

    Exit codes: 0 done; 2 something you can fix (bad input, unreachable bot, a file or folder that
    cannot be read or written, nothing to report); 1 a bug (please report it with the traceback).
    """


def _table(*columns: str, title: str | None = None) -> Table:
    """A rich table whose long cells fold onto more lines instead of being cut with '…'."""
    out = Table(title=title)
    for column in columns:
        out.add_column(column, overflow="fold")
    return out


YES_HELP = "start even when an endpoint fails the check at start (its workers or items then meet the errors)"


def _check_endpoints(bots, yes: bool) -> None:
    """Ask every OpenAI-compatible bot once (bots/check.py); one line per failing one, then refuse
    to go on unless --yes: a wrong base_url, key or model is found here, not by the first worker."""
    from .bots.check import check_endpoints_blocking

    failures = check_endpoints_blocking(bots)
    for failure in failures:
        err_console.print(f"endpoint check failed: {escape(failure.line())}", highlight=False, soft_wrap=True)
    if failures and not yes:
        raise fail(
            f"{len(failures)} endpoint{'s' if len(failures) > 1 else ''} failed the check above; fix base_url, "
            "model or api_key_env in the study file (or start the server), or go on anyway with --yes"
        )
    if failures:
        err_console.print("going on anyway (--yes)", highlight=False)


def _study_endpoints(config, names=None) -> list:
    """The study's bots that have an endpoint to check (type openai), built from the study file."""
    from .bots.registry import build_bot

    return [
        build_bot(b.name, b.type, b.options)
        for b in config.bots
        if b.type == "openai" and (names is None or b.name in names)
    ]


# -- init ----------------------------------------------------------------------------------------------
@app.command()
@friendly
def init(
    method: str = typer.Argument(..., help=f"one of: {', '.join(registry.ids(collectable=True))}"),
    folder: Path = typer.Argument(..., help="the study folder to create"),
    force: bool = typer.Option(False, "--force", help="overwrite an existing study.yaml"),
) -> None:
    """Write a commented example study file for a method.

    Example: dialeval init acute my-study
    """
    from .config import STUDY_FILE, load_study

    collectable = registry.ids(collectable=True)
    if method not in collectable or registry.get(method).study_template is None:
        raise DialevalError(f"unknown method '{method}'; choose one of: {', '.join(collectable)}")
    target = folder / STUDY_FILE
    if target.exists() and not force:
        raise DialevalError(f"{target} exists already; pass --force to overwrite it")
    folder.mkdir(parents=True, exist_ok=True)
    package, _, name = str(registry.get(method).study_template).partition(":")
    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    text = text.replace(f"name: my-{method}-study", f"name: {folder.name}", 1)
    target.write_text(text, encoding="utf-8")
    config = load_study(target)  # the template must always validate
    if config.generation.mode == "none" and registry.get(method).generate is None:
        console.print(
            f"wrote {target}: edit it, then run [bold]dialeval serve {escape(str(folder))}[/] "
            "(annotators chat live with the bots; no conversations to generate first)"
        )
    else:
        console.print(f"wrote {target}: edit it, then run [bold]dialeval generate {escape(str(folder))}[/]")


# -- generate ------------------------------------------------------------------------------------------
def _progress() -> Progress:
    # imported here, not with the CLI: every command (--help too) paid ~17 ms for rich.progress
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def _report_generation(result, what: str = "conversations") -> None:
    console.print(f"made {len(result.made)}, kept {len(result.skipped)} already made, failed {len(result.failed)}")
    if result.failed:
        table = _table(what.rstrip("s"), "why it failed", title=f"failed {what} (rerun to retry them)")
        for cid, why in sorted(result.failed.items()):
            table.add_row(cid, why)
        console.print(table)


@app.command()
@friendly
def generate(
    study: Path | None = typer.Argument(None, help="a study folder; omit to use --bots/--mode/-o"),
    bots: str | None = typer.Option(None, "--bots", help="comma-separated bot types (or the study's bot names)"),
    mode: str | None = typer.Option(None, "--mode", help="self-chat or bot-bot"),
    n: int | None = typer.Option(None, "-n", "--conversations", help="conversations per bot (self-chat) or pair"),
    turns: int | None = typer.Option(None, "--turns", help="turns per side"),
    output: Path | None = typer.Option(None, "-o", "--output", help="write conversations to this JSONL file"),
    fmt: str = typer.Option("dialeval", "--format", help="output format: dialeval, parlai or openai"),
    seed: int = typer.Option(
        0, "--seed", help="with --bots/--mode/-o: each conversation's random stream (a study uses its file's seed)"
    ),
    no_personas: bool = typer.Option(False, "--no-personas"),
    concurrency: int | None = typer.Option(None, "--concurrency"),
    yes: bool = typer.Option(False, "--yes", help=YES_HELP),
) -> None:
    """Generate the conversations a study asks for (self-chat or bot-bot), resumably.

    Examples:
      dialeval generate my-study
      dialeval generate --bots retrieval,repeat --mode self-chat -n 5 --turns 6 -o chats.jsonl
    """
    from .bots.registry import build_bot
    from .dialogue.generate import GenerationPlan, generate_study, study_plan
    from .dialogue.generate import generate as run_generation

    opened = None
    if study is not None:
        from .study import open_study

        opened = open_study(study)
        own = registry.get(opened.config.method).generate
        if own is not None and mode is None:  # the method makes its own material (e.g. answers to prompts)
            try:
                _generate_own(own, opened, concurrency)
            finally:
                opened.close()
            return
        if opened.config.generation.mode == "none" and mode is None:
            opened.close()
            console.print(
                f"{study}: a {opened.config.method} study has no conversations to generate "
                f"(annotators chat live with the bots); next: [bold]dialeval serve {escape(str(study))}[/]"
            )
            return
        plan = study_plan(
            opened.config,
            bots.split(",") if bots else None,
            mode=mode,
            conversations=n,
            turns=turns,
            personas=False if no_personas else None,
            concurrency=concurrency,
        )
        existing = opened.store.conversation_status(opened.id)
        try:
            _check_endpoints(_study_endpoints(opened.config, set(plan.bots)), yes)
        except BaseException:
            opened.close()
            raise
    else:
        if not (bots and mode and output):
            raise DialevalError("without a study folder, give --bots, --mode and -o (see dialeval generate --help)")
        chosen = bots.split(",")
        plan = GenerationPlan(
            mode=mode,
            bots=chosen,
            conversations=n or 10,
            turns=turns or 6,
            personas=not no_personas,
            concurrency=concurrency or 4,
            seed=seed,
        )
        bot_objects = {name: build_bot(name, name, {}) for name in chosen}
        existing, sink = _file_sink(output, fmt)

    planned = [cid for cid, _ in plan.conversation_ids()] + plan.human_ids()
    with _progress() as progress:
        # Only this plan's conversations count: a study may hold others (onboarding, an earlier plan).
        task = progress.add_task("conversations", total=len(planned))
        progress.advance(task, sum(1 for cid in planned if cid in existing and existing[cid] is None))

        if opened is not None:
            try:
                result = generate_study(opened, plan, on_done=lambda conversation: progress.advance(task))
            finally:
                opened.close()
        else:

            def on_done(conversation) -> None:
                sink(conversation)
                progress.advance(task)

            from .asyncrun import run_blocking

            result = run_blocking(lambda: run_generation(plan, bot_objects, existing=existing, on_done=on_done))
    _report_generation(result)
    if study is None:
        _convert_output(output, fmt)
    if result.failed:
        first = next(iter(sorted(result.failed.items())))
        raise fail(
            f"{len(result.failed)} conversation(s) failed, e.g. {first[0]}: {first[1]}; "
            "fix the bot (is it running? see the table above) and rerun to retry only those"
        )


def _generate_own(spec: str, opened, concurrency: int | None) -> None:
    """A method's own generation (Method.generate), with the same progress bar and failure table."""
    with _progress() as progress:
        task = progress.add_task("answers", total=None)

        def on_total(total: int, done: int) -> None:
            progress.update(task, total=total, completed=done)

        result = registry.load_part(spec)(
            opened, concurrency=concurrency, on_total=on_total, on_done=lambda item: progress.advance(task)
        )
    _report_generation(result, what="answers")
    if result.failed:
        first = next(iter(sorted(result.failed.items())))
        raise fail(
            f"{len(result.failed)} answer(s) failed, e.g. {first[0]}: {first[1]}; they are kept apart (never "
            "shown to annotators): fix the bot and rerun to retry only those"
        )


OUTPUT_FORMATS = ("dialeval", "parlai", "openai")


def _file_sink(output: Path, fmt: str):
    """Existing conversations of an output file (for resuming) and a function that appends one.

    dialeval JSONL is appended conversation by conversation, so a rerun resumes it. For ParlAI and
    OpenAI-messages output the same resumable JSONL is kept beside it (OUTPUT.dialeval.jsonl) and
    the requested format is written from it at the end (`_convert_output`).
    """
    from .formats.jsonl import append_conversation_jsonl, read_conversations_jsonl

    if fmt not in OUTPUT_FORMATS:
        raise DialevalError(f"unknown --format {fmt!r}; choose one of: {', '.join(OUTPUT_FORMATS)}")
    journal = output if fmt == "dialeval" else output.with_name(output.name + ".dialeval.jsonl")
    existing: dict[str, str | None] = {}
    if journal.exists():
        kept = [c for c in read_conversations_jsonl(journal) if c.error is None]
        existing = {c.id: None for c in kept}
        journal.write_text("", encoding="utf-8")  # failed ones are dropped and retried
        for c in kept:
            append_conversation_jsonl(journal, c)
    journal.parent.mkdir(parents=True, exist_ok=True)
    return existing, functools.partial(append_conversation_jsonl, journal)


def _convert_output(output: Path, fmt: str) -> None:
    if fmt == "dialeval":
        return
    from .formats.jsonl import read_conversations_jsonl

    journal = output.with_name(output.name + ".dialeval.jsonl")
    conversations = [c for c in read_conversations_jsonl(journal) if c.error is None]
    if fmt == "parlai":
        from .formats.parlai import write_parlai_conversations

        write_parlai_conversations(conversations, output, self_chat=all(len(set(c.bots)) == 1 for c in conversations))
    else:
        from .formats.openai_messages import write_openai_messages

        write_openai_messages(conversations, output)
    console.print(
        f"wrote {len(conversations)} conversations to {output} ({fmt}); {journal.name} keeps the run resumable"
    )


# -- serve / demo -----------------------------------------------------------------------------------------
@app.command()
@friendly
def serve(
    studies: list[Path] = typer.Argument(..., help="one or more study folders"),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
    workers: int = typer.Option(1, "--workers", help="stateless worker processes sharing the database"),
    open_browser: bool = typer.Option(False, "--open/--no-browser", help="open the start page in a browser"),
    db_connections: int | None = typer.Option(
        None,
        "--db-connections",
        min=1,
        help="database connections this server may open in all, shared by the workers "
        "(default: PostgreSQL's max_connections minus a reserve)",
    ),
    access_log: bool = typer.Option(
        False, "--access-log", help="one line per request on stderr: method, path, status, ms, hashed annotator"
    ),
    yes: bool = typer.Option(False, "--yes", help=YES_HELP),
) -> None:
    """Serve studies to annotators; prints the annotator, Prolific, MTurk and admin links.

    Example: dialeval serve my-study --port 8000 --workers 2
    """
    from .config import load_study
    from .web.serve import serve as run_server

    _check_endpoints([bot for folder in studies for bot in _study_endpoints(load_study(folder))], yes)
    run_server(
        studies,
        host=host,
        port=port,
        workers=workers,
        open_browser=open_browser,
        print_fn=lambda text: console.print(text, highlight=False, markup=False, soft_wrap=True),
        db_connections=db_connections,
        access_log=access_log,
    )


# -- backup / restore / migrate -----------------------------------------------------------------------------
def _study_database(study: Path) -> tuple[str, str]:
    """(study name, database URL) of a study folder, without writing to its database."""
    from .config import load_study
    from .store.engine import database_url

    config = load_study(study)
    folder = study if study.is_dir() else study.parent
    return config.name, database_url(folder, config.database)


def _print_counts(counts: dict[str, int]) -> None:
    shown = {
        k: counts[k]
        for k in ("studies", "conversations", "turns", "annotators", "units", "assignments", "judgments", "events")
        if k in counts
    }
    console.print(", ".join(f"{n} {k}" for k, n in shown.items()), highlight=False)


@app.command()
@friendly
def backup(
    study: Path = typer.Argument(..., help="the study folder"),
    dest: Path = typer.Argument(..., help="the backup file to write (SQLite); must not exist"),
) -> None:
    """Copy a study's data to one file, consistently, even while it is being served.

    Example: dialeval backup my-study backups/my-study-2026-05-01.db
    """
    from .store.transfer import backup as run_backup
    from .store.transfer import study_id_in

    name, url = _study_database(study)
    counts = run_backup(url, study_id_in(url, name), dest)
    console.print(f"backup of '{name}' written to {dest}", highlight=False)
    _print_counts(counts)


@app.command()
@friendly
def restore(
    backup_file: Path = typer.Argument(..., help="a file made by `dialeval backup`"),
    study: Path = typer.Argument(..., help="the study folder; its database (study.yaml) must not hold the study"),
) -> None:
    """Put a backup into the study folder's database (SQLite file or PostgreSQL), every id kept.

    Example: dialeval restore backups/my-study-2026-05-01.db my-study
    """
    from .store.transfer import copy_between, study_uid_in
    from .study import STUDY_ID_FILE

    if not backup_file.is_file():
        raise DialevalError(f"no backup file {backup_file}")
    name, url = _study_database(study)
    folder = study if study.is_dir() else study.parent
    counts = copy_between(f"sqlite:///{backup_file.resolve()}", url, name)
    uid = study_uid_in(url, name)
    if uid:  # the folder now serves the restored study: give it that study's stable id
        (folder / STUDY_ID_FILE).write_text(uid + "\n", encoding="utf-8")
    console.print(f"restored '{name}' into {url.split('?')[0]}", highlight=False)
    _print_counts(counts)


@app.command()
@friendly
def migrate(
    study: Path = typer.Argument(..., help="the study folder"),
    to: str = typer.Option(..., "--to", help="the new database, e.g. postgresql://user@host/db"),
) -> None:
    """Move a study to another database (e.g. SQLite to PostgreSQL) with every row and id kept;
    study.yaml then names the new database. Stop serving the study first.

    Example: dialeval migrate my-study --to postgresql://dialeval@db.example.org/dialeval
    """
    from .config import STUDY_FILE
    from .store.engine import normalize_url
    from .store.transfer import copy_between

    name, url = _study_database(study)
    if normalize_url(to) == url:
        raise DialevalError("the study already uses that database")
    counts = copy_between(url, to, name)
    folder = study if study.is_dir() else study.parent
    path = folder / STUDY_FILE
    lines = path.read_text(encoding="utf-8").splitlines()
    # a line edit keeps the file's comments; the old database stays as it was
    kept = [ln for ln in lines if not ln.startswith("database:")]
    kept.append(f"database: {to}")
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")
    console.print(f"moved '{name}' to {to.split('?')[0]}; {path} now names it", highlight=False)
    _print_counts(counts)


@app.command()
@friendly
def demo(
    out: Path = typer.Option(Path("dialeval-demo"), "--out", help="where the demo studies are written"),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
    workers: int = typer.Option(1, "--workers"),
    no_browser: bool = typer.Option(False, "--no-browser", help="do not open a browser"),
    simulate_n: int = typer.Option(0, "--simulate", help="complete every study with N simulated annotators"),
    no_serve: bool = typer.Option(False, "--no-serve", help="stop after making (and simulating) the studies"),
    seed: int = typer.Option(1, "--seed", help="seed of the demo studies and their simulated crowd"),
    force: bool = typer.Option(False, "--force", help="replace the demo studies of an earlier run in --out"),
) -> None:
    """A demo study of every method with the bundled bots, served on 127.0.0.1:8000.

    Examples:
      dialeval demo                                   # serve it; open the start page
      dialeval demo --port 8080 --no-browser
      dialeval demo --simulate 20 --no-serve --out demo   # completed by 20 simulated annotators, with reports
    """
    from .demo import clear_demo, create_demo, planned_conversations

    if out.exists() and not out.is_dir():
        raise DialevalError(f"--out {out} is a file; name a folder")
    if out.exists() and any(out.iterdir()) and not force:
        # An earlier run's studies would be added to, and the summary would show only the new run.
        if sys.stdin.isatty() and sys.stdout.isatty():
            if not typer.confirm(f"{out} is not empty: replace its demo studies?", default=False):
                raise fail(f"{out} is not empty; choose another --out, or pass --force to replace its demo studies")
        else:
            raise fail(f"{out} is not empty; choose another --out, or pass --force to replace its demo studies")
    clear_demo(out)
    with _progress() as progress:
        task = progress.add_task("demo conversations", total=planned_conversations(seed=seed))
        folders = create_demo(out, seed=seed, progress=lambda method, conv: progress.advance(task))
    console.print(f"demo studies in {out}: " + ", ".join(f.name for f in folders))
    if simulate_n:
        from .simulate.crowd import simulate_demo

        results = simulate_demo(out, annotators=simulate_n, seed=seed)
        table = _table(
            "method",
            "annotators",
            "judgments stored",
            "careless caught",
            "bot order recovered",
            "report",
            title="simulated crowd",
        )
        for method, result in results.items():
            recovery = result.recovery or {}
            table.add_row(
                method,
                str(result.annotators),
                str(result.judgments_stored),
                f"{result.careless_caught} of {result.careless_judged}",
                "exact" if recovery.get("exact") else _spearman_text(recovery.get("spearman")),
                str(out / method / "report" / "index.html"),
            )
        console.print(table)
        for method, result in results.items():
            for error in result.errors[:5]:
                err_console.print(f"  {method}: {error}", highlight=False, markup=False, soft_wrap=True)
    if not no_serve:
        serve(
            folders,
            host=host,
            port=port,
            workers=workers,
            open_browser=not no_browser,
            db_connections=None,
            access_log=False,
        )


@app.command()
@friendly
def simulate(
    study: Path = typer.Argument(..., help="a study folder (its conversations generated, if it needs them)"),
    annotators: int = typer.Option(40, "--annotators", help="how many simulated annotators"),
    careless: float = typer.Option(0.15, "--careless", help="share of careless annotators (QC should catch them)"),
    spammers: float = typer.Option(0.0, "--spammers", help="share of spammers (answer at random, pass the QC)"),
    adversaries: float = typer.Option(0.0, "--adversaries", help="share of adversaries (always vote for one bot)"),
    adversary_target: str | None = typer.Option(
        None, "--adversary-target", help="the bot the adversaries vote for (default: the weakest)"
    ),
    strengths: str | None = typer.Option(
        None,
        "--strengths",
        metavar="BOT=S,...",
        help="each bot's latent strength (logit scale, e.g. a=1.2,b=0,c=-1.2; default: the bots' order, 0.6 apart)",
    ),
    seed: int = typer.Option(
        0,
        "--seed",
        help="the crowd's seed: who is careless, each profile and its answers. The server still picks units "
        "and sides at random, so two runs agree in distribution, not judgment by judgment",
    ),
    url: str | None = typer.Option(None, "--url", help="a running server to use instead of an in-process one"),
    report_too: bool = typer.Option(True, "--report/--no-report", help="write the study's report afterwards"),
    copy: Path | None = typer.Option(
        None, "--copy", help="simulate in a copy of the study made in this folder (reused if made before)"
    ),
    into_study: bool = typer.Option(
        False, "--into-study", help="simulate in the study itself even though it has real annotators"
    ),
) -> None:
    """A simulated crowd works through a real study over HTTP (see docs/simulated-crowd.md).

    A study without real annotators is simulated in place; one with real annotators is refused
    unless told where: --copy DIR (the study as prepared, no annotator's data) or --into-study.
    Simulated annotators have the platform `simulated`: reports and approvals leave them out
    beside real ones (dialeval report --include-simulated counts them).

    Examples:
      dialeval simulate my-study --annotators 40
      dialeval simulate my-study --copy my-study-simulated
      dialeval simulate my-study --strengths "bot-a=1.2,bot-b=0,bot-c=-1.2"
    """
    from .simulate.crowd import simulate_study, write_study_report
    from .simulate.where import copy_for_simulation, real_annotators, study_folder

    for flag, share in (("--careless", careless), ("--spammers", spammers), ("--adversaries", adversaries)):
        if not 0 <= share <= 1:
            raise DialevalError(f"{flag} is a share between 0 and 1")
    if careless + spammers + adversaries > 1:
        raise DialevalError("--careless, --spammers and --adversaries add up to more than 1")
    if copy is not None and into_study:
        raise DialevalError("--copy and --into-study exclude each other; choose where the simulated crowd works")
    if copy is not None and url:
        raise DialevalError("--url sends the crowd to a server of the study itself; with --copy leave --url out")
    if copy is not None:
        made = copy_for_simulation(study, copy)
        console.print(f"{'copied' if made else 'adding to the earlier copy of'} {study} in {copy}", highlight=False)
        study = copy
    elif not into_study:
        real = real_annotators(study_folder(study))
        if real:
            raise fail(
                f"{study} has {real} real annotator{'s' if real != 1 else ''}: simulated ones would mix with "
                f"their data; simulate in a copy (--copy DIR) or, knowingly, in the study itself (--into-study)"
            )
    from .report import figure_worker

    with contextlib.ExitStack() as stack:
        # The report's figures are drawn by a worker forked now, before the simulation's threads
        # start (it may only fork then): its matplotlib import overlaps the simulation, its drawing
        # the statistics, as in `dialeval report` (report/figure_worker.py).
        worker = stack.enter_context(figure_worker.figure_worker()) if report_too else None
        result = simulate_study(
            study,
            annotators=annotators,
            seed=seed,
            careless_share=careless,
            base_url=url,
            spammer_share=spammers,
            adversary_share=adversaries,
            adversary_target=adversary_target,
            strengths=_parse_strengths(strengths) if strengths is not None else None,
        )
        console.print(result.summary())
        for error in result.errors[:10]:
            err_console.print(f"  simulator: {error}", highlight=False, markup=False)
        if report_too:
            with cyclic_gc_paused(age_after=True):  # as `dialeval report`: no collection passes mid-report
                paths = write_study_report(study, worker=worker)
    if report_too:
        console.print(f"wrote the report: {paths}")
        import json as json_lib

        written = json_lib.loads((paths / "report.json").read_text(encoding="utf-8"))
        unranked = (written.get("no_ranking") or {}).get("note")
        if unranked:  # a prompt set answered by one system: the report says why it ranks nobody
            console.print(unranked, highlight=False, markup=False, soft_wrap=True)


def _parse_strengths(text: str) -> dict[str, float]:
    """--strengths "a=1.2,b=0,c=-1.2" as {bot: strength}; a clear message for anything else."""
    out: dict[str, float] = {}
    for item in (part.strip() for part in text.split(",")):
        name, eq, value = item.partition("=")
        name = name.strip()
        try:
            strength = float(value)
        except ValueError:
            strength = math.nan
        if not eq or not name or not math.isfinite(strength):
            raise DialevalError(f"--strengths: '{item}' is not BOT=NUMBER (e.g. --strengths \"a=1.2,b=0,c=-1.2\")")
        if name in out:
            raise DialevalError(f"--strengths names '{name}' twice")
        out[name] = strength
    return out


# -- plan / bench -----------------------------------------------------------------------------------------
@app.command()
@friendly
def plan(
    study: Path | None = typer.Argument(None, help="a study folder (its method; its data as a pilot)"),
    expect: list[str] = typer.Option([], "--expect", help="expected effect WINNER>LOSER:RATE, e.g. bot-a>bot-b:0.60"),
    method: str | None = typer.Option(None, "--method", help="plan a method without a study folder"),
    seconds: float | None = typer.Option(None, "--seconds-per-judgment", help="default: from the papers"),
    power: float = typer.Option(0.8, "--power"),
    alpha: float = typer.Option(0.05, "--alpha"),
    json_path: Path | None = typer.Option(None, "--json", help="write the whole plan (with curves) as JSON"),
    plot_path: Path | None = typer.Option(None, "--plot", help="write the power curves as PNG"),
) -> None:
    """Judgments and annotator-hours to significance, from expected effects or a pilot study's data.

    Examples:
      dialeval plan my-study --expect "bot-a>bot-b:0.60"
      dialeval plan --method acute --expect "a>b:0.6" --expect "b>c:0.55" --json plan.json
      dialeval plan pilot-study                  # observed win rates and timings of the pilot
    """
    import json as json_lib

    from .planning import plan_from_pilot, plan_study

    if study is not None:
        from .config import load_study

        method = method or load_study(study).method
    if not method:
        raise DialevalError("give a study folder or --method")
    if expect:
        result = plan_study(method, list(expect), seconds_per_judgment=seconds, power=power, alpha=alpha)
    elif study is not None:
        from .report import study_report

        result = plan_from_pilot(study_report(study), power=power, alpha=alpha)
    else:
        raise DialevalError("give --expect WINNER>LOSER:RATE, or a study folder with pilot data")
    table = _table(
        "pair",
        "expected",
        "judgments needed",
        "annotator-hours",
        "anytime-valid (expected)",
        title=f"{method}: to reach p < {alpha} with power {power}",
    )
    for p in result.get("pairs", []):
        seq = p.get("sequential") or {}
        table.add_row(
            f"{p['a']} > {p['b']}",
            f"{p['win_rate']:.2f}",
            str(p.get("judgments_needed")),
            f"{p['hours_needed']:.1f}" if p.get("hours_needed") is not None else "not reached",
            _round(seq.get("expected_judgments", seq.get("expected_n"))),
        )
    console.print(table)
    ranking = result.get("ranking")
    if ranking:
        line = (
            f"correct, decided ranking of {', '.join(ranking.get('bots_best_first', []))}: "
            f"{ranking.get('judgments_needed')} judgments ({ranking.get('n_needed')} per pair), "
            f"{(ranking.get('hours_needed') or 0):.1f} annotator-hours with uniform allocation"
        )
        adaptive = ranking.get("adaptive") or {}
        if adaptive.get("expected_judgments"):
            line += (
                f"; about {adaptive['expected_judgments']:.0f} judgments "
                f"({adaptive.get('expected_hours', 0):.1f} h) with adaptive selection and anytime-valid stopping"
            )
        console.print(line)
    if json_path:
        json_path.write_text(json_lib.dumps(result, indent=2, default=str), encoding="utf-8")
        console.print(f"wrote {json_path}")
    if plot_path:
        from .report import plots

        curves = {
            f"{p['a']} > {p['b']}": [(c["hours"], c["power"]) for c in p.get("curve", [])]
            for p in result.get("pairs", [])
        }
        fig = plots.lines(
            curves,
            "Probability of p < alpha vs annotator-hours",
            "annotator-hours (log scale)",
            "power",
            ylim=(0, 1.02),
            logx=True,
            stop_at=0.99,
            hline=power,
        )
        if fig is None:
            raise DialevalError("nothing to plot")
        fig.savefig(plot_path, dpi=110)
        console.print(f"wrote {plot_path}")


def _round(value) -> str:
    return "" if value is None else f"{value:.0f}" if isinstance(value, float) else str(value)


bench_app = typer.Typer(help="Benchmarks (method and results in benchmarks/README.md).", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


@bench_app.command("adaptive")
@friendly
def bench_adaptive(
    json_path: Path | None = typer.Option(None, "--json", help="write the results as JSON"),
    repeats: int = typer.Option(200, "--repeats", help="simulated studies per scenario"),
    seed: int = typer.Option(0, "--seed", help="seed of the simulated studies (the same seed, the same results)"),
    quick: bool = typer.Option(False, "--quick", help="a smoke test in seconds, not a measurement"),
) -> None:
    """Adaptive collection vs uniform allocation, and the A/A false-positive rate.

    Example: dialeval bench adaptive --json bench.json
    """
    import json as json_lib

    from .bench.adaptive import run_adaptive_benchmark

    result = run_adaptive_benchmark(repeats=repeats, seed=seed, quick=quick)
    for key in (
        "uniform_judgments",
        "pooled_bt_judgments",
        "uniform_same_stopping_paid",
        "adaptive_judgments",
        "adaptive_paid",
        "savings",
        "paid_savings",
        "paid_savings_vs_pooled_bt",
        "paid_savings_vs_uniform_same_stopping",
        "aa_false_positive_rate",
        "naive_aa_false_positive_rate",
    ):
        console.print(f"{key}: {result.get(key)}")
    for r, rates in ((k, v) for k, v in result["aa"]["crowd"].items() if k.endswith("per_annotator")):
        console.print(
            f"A/A, annotators differ (sd {result['aa']['crowd']['sd']}), {r.split('_')[0]} each: "
            f"per-judgment test {rates['per_judgment']:.4f}, annotator-level {rates['annotator_level']:.4f}"
        )
    if json_path:
        json_path.write_text(json_lib.dumps(result, indent=2, default=str), encoding="utf-8")
        console.print(f"wrote {json_path}")


@bench_app.command("judges")
@friendly
def bench_judges(
    json_path: Path | None = typer.Option(None, "--json", help="write the results as JSON"),
    plot_path: Path | None = typer.Option(None, "--plot", help="write the widths plot (PNG)"),
    data: Path | None = typer.Option(None, "--data", help="folder of the Arena judge files (default ../shared/data)"),
    repeats: int = typer.Option(300, "--repeats", help="resampled studies per number of human votes"),
    seed: int = typer.Option(0, "--seed", help="seed of the resampled studies (the same seed, the same results)"),
    quick: bool = typer.Option(False, "--quick", help="a smoke test in seconds, not a measurement"),
) -> None:
    """Judge-corrected intervals (PPI++) on real Arena battles: coverage, widths, human votes saved.

    Example: dialeval bench judges --json judges.json
    """
    from .bench.judges import print_summary, run_judges_benchmark

    print_summary(run_judges_benchmark(data, repeats=repeats, seed=seed, quick=quick), json_path, plot_path)


@bench_app.command("judge-guided")
@friendly
def bench_judge_guided(
    json_path: Path | None = typer.Option(None, "--json", help="write the results as JSON"),
    data: Path | None = typer.Option(None, "--data", help="folder of the Arena judge files (default ../shared/data)"),
    reps: int = typer.Option(200, "--reps", help="runs per pool and design"),
    cap: int = typer.Option(1500, "--cap", help="human steps after which a run counts as undecided"),
    skip_sim: bool = typer.Option(False, "--skip-sim", help="only the Arena part"),
    quick: bool = typer.Option(False, "--quick", help="a smoke test in seconds, not a measurement"),
) -> None:
    """Judge-guided stopping vs the human-only test: human judgments to decide a bot pair.

    Example: dialeval bench judge-guided --json judge_guided.json
    """
    import json as json_lib

    from .bench.judge_guided import run_judge_guided_benchmark

    result = run_judge_guided_benchmark(data, reps=reps, cap=cap, skip_sim=skip_sim, quick=quick)
    pairs = result["arena"]["pairs"]
    console.print(f"{len(pairs)} Arena pools, {len(result['arena']['null'])} null pools, {result['seconds']} s")
    if json_path:
        json_path.write_text(json_lib.dumps(result, indent=1) + "\n", encoding="utf-8")
        console.print(f"wrote {json_path}")


# -- import / export -----------------------------------------------------------------------------------


@app.command("import")
@friendly
def import_(
    fmt: str = typer.Argument(..., metavar="FORMAT", help=f"one of: {', '.join(importers())}; or answers"),
    paths: list[Path] = typer.Argument(
        ..., metavar="PATH...", help="the file (or folder, for spot-the-bot and parlai); several for answers"
    ),
    study: Path = typer.Argument(..., help="the study folder to create or add to"),
    domain: str | None = typer.Option(None, "--domain", help="spot-the-bot: dailydialog, empathetic or convai2"),
    rename: list[str] = typer.Option([], "--rename", help="relabel a system: old=new (repeatable)"),
    method: str | None = typer.Option(None, "--method", help="method of a conversations-only import"),
    paper_names: bool = typer.Option(
        True,
        "--paper-names/--export-names",
        help="spot-the-bot: the paper's short names (GPT, BR, S2, DR, BL; HF, LC, KV) or the export's",
    ),
    judges: list[Path] = typer.Option(
        [], "--judges", help="arena: a judge's verdicts on the same battles, one file per judge (repeatable)"
    ),
    max_text_chars: int | None = typer.Option(
        None, "--max-text-chars", min=1, help="longest text accepted (default 20000 or $DIALEVAL_MAX_TEXT_CHARS)"
    ),
    append: bool = typer.Option(False, "--append", help="add a different source to a study that holds data"),
    encoding: str | None = typer.Option(
        None, "--encoding", help="the file's text encoding (default UTF-8; a byte-order mark is honoured)"
    ),
) -> None:
    """Import a published or outside data set into a study folder.

    A system name the store cannot take (e.g. zoo:blender/blender_90M/model) is made valid
    (zoo-blender-blender_90M-model); the original is kept as the bot's original_name in study.yaml.

    Examples:
      dialeval import dialogue-eval Combined_Batches_305hits.csv de-run1
      dialeval import spot-the-bot ../shared/data/spot-the-bot --domain dailydialog stb-dd
      dialeval import arena ../shared/data/arena-judges/human.jsonl arena-human
      dialeval import answers alpaca_outputs.json model_answer/*.jsonl my-eval   # answers to a prompt set
    """
    from .formats.reading import ImporterBug, session

    with session(encoding) as reading:
        try:
            _import(fmt, paths, study, domain, rename, method, paper_names, judges, max_text_chars, append, reading)
        except ImporterBug as bug:
            err_console.print(f"[bold red]error:[/] {escape(str(bug))}", highlight=False, markup=True, soft_wrap=True)
            raise typer.Exit(1) from None


def _import(fmt, paths, study, domain, rename, method, paper_names, judges, max_text_chars, append, reading) -> None:
    """The import command's work (read, then store under the study's import lock); a bug inside it
    becomes one line and a log file (formats/reading.py: as_bug)."""
    from .formats.reading import as_bug
    from .importing import import_into_study

    try:
        import_into_study(fmt, paths, study, domain, rename, method, paper_names, judges, max_text_chars, append)
    except (DialevalError, OSError, KeyboardInterrupt, typer.Exit):
        raise
    except Exception as exc:
        raise as_bug(exc, f"import {fmt} {' '.join(str(p) for p in paths)}") from None
    for message in reading.notes:
        console.print(f"note: {message}", highlight=False)


@app.command()
@friendly
def export(
    study: Path = typer.Argument(..., help="a study folder"),
    fmt: str | None = typer.Option(
        None, "--format", help="csv, jsonl or parquet (default: from -o); or a method's own, e.g. preferences"
    ),
    output: Path = typer.Option(..., "-o", "--output", help="the file to write"),
    keep_ties: bool = typer.Option(
        False, "--keep-ties", help="preferences: keep items judged a tie or both bad, labelled as such"
    ),
) -> None:
    """Export every judgment as a tidy table: one row per judgment.

    Examples:
      dialeval export de-run1 --format csv -o judgments.csv
      dialeval export my-eval --format preferences -o prefs.jsonl   # prompt-set studies: chosen/rejected pairs
    """
    from .formats.tidy import export_judgments
    from .study import open_study

    opened = open_study(study)
    own = registry.get(opened.config.method).exports.get(fmt or "")
    if own is not None:  # the method's own export format
        try:
            n = registry.load_part(own)(opened, output, keep_ties=keep_ties)
        finally:
            opened.close()
        console.print(f"wrote {n} items to {output}")
        return
    try:
        dataset = opened.store.load_dataset(opened.id)
    finally:
        opened.close()
    export_judgments(dataset, output, fmt)
    console.print(f"wrote {len(dataset.judgments)} judgments to {output}")


# -- judge ---------------------------------------------------------------------------------------------
@app.command()
@friendly
def judge(
    study: Path = typer.Argument(..., help="a study folder"),
    bot: str | None = typer.Option(None, "--bot", help="the judge: a bot of the study file (or a name for --bot-type)"),
    bot_type: str | None = typer.Option(None, "--bot-type", help="a judge not in the study file: openai, local-llm"),
    option: list[str] = typer.Option([], "--option", help="an option of --bot-type: key=value (repeatable)"),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="questions in flight at once"),
    limit: int | None = typer.Option(None, "--limit", min=1, help="judge at most N more items"),
    yes: bool = typer.Option(False, "--yes", help=YES_HELP),
) -> None:
    """An LLM answers the study's own questions on its units, stored as a judge's judgments (resumable).

    Examples:
      dialeval judge my-study --bot gpt4o-judge
      dialeval judge my-study --bot-type openai --option base_url=http://127.0.0.1:8080/v1 --option model=qwen
      dialeval judge my-study --bot-type local-llm --bot smollm2 --limit 20
    """
    from .judges.run import judge_study, summary_lines

    with _progress() as progress:
        task = progress.add_task("judge answers", total=None)
        result = judge_study(
            study,
            bot=bot,
            bot_type=bot_type,
            options=option,
            concurrency=concurrency,
            limit=limit,
            on_total=lambda n: progress.update(task, total=n),
            on_answer=lambda: progress.advance(task),
            check_judge=lambda judge: _check_endpoints([judge], yes),
        )
    for line in summary_lines(result):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    console.print(f"next: dialeval report {study} (the judge's agreement with people and its biases)")


# -- report / compare ------------------------------------------------------------------------------------
@app.command()
@friendly
def report(
    study: Path = typer.Argument(..., help="a study folder"),
    json_path: Path | None = typer.Option(
        None, "--json", help="where to write the JSON (default STUDY/report/report.json)"
    ),
    html_path: Path | None = typer.Option(
        None, "--html", help="where to write the HTML (default STUDY/report/index.html)"
    ),
    include_judges: bool = typer.Option(
        False, "--include-judges", help="count LLM judges' verdicts in the statistics like an annotator's"
    ),
    include_simulated: bool = typer.Option(
        False,
        "--include-simulated",
        help="count simulated annotators (dialeval simulate) beside real ones; a study of only simulated "
        "annotators is always reported, saying so",
    ),
    png: bool = typer.Option(
        False, "--png", help="also write each figure as PNG (report/plots/NAME.png, 110 dpi) beside its SVG"
    ),
) -> None:
    """Analyse a study: report/index.html (self-contained), report/report.json and plots (SVG).

    Examples:
      dialeval report my-study
      dialeval report my-study --json out.json --html out.html
      dialeval report my-study --png            # the figures as PNG too, for slides
    """
    from .report import figure_worker, study_report, write_report

    # The figures are drawn in a process forked here, before the statistics' libraries are imported:
    # on 2 cores matplotlib's import and drawing overlap the store and the statistics (0.5 s of a
    # small report's 1.7 s; report/figure_worker.py). Without it (or if it fails) they are drawn here.
    with cyclic_gc_paused(age_after=True), figure_worker.figure_worker() as worker:
        result = study_report(study, include_judges=include_judges, include_simulated=include_simulated)
        if not result.get("study", {}).get("collected", {}).get("judgments") and not result.get("judge_audit"):
            raise DialevalError(_nothing_to_report(study, result))
        paths = write_report(result, study / "report", json_path=json_path, html_path=html_path, png=png, worker=worker)
    unranked = (result.get("no_ranking") or {}).get("note")
    if unranked:  # not enough data for a ranking (a prompt set answered by one system): exit 2, as no judgments
        if result.get("simulated"):
            console.print(result["simulated"]["note"], highlight=False, markup=False, soft_wrap=True)
        raise DialevalError(f"{study}: {unranked} The report says so too: {paths['html']} and {paths['json']}")
    table = _table("system", "n", "score", title=f"{result['method']}: systems, best first")
    for s in result.get("systems", []):
        score = s.get("score")
        table.add_row(str(s.get("name")), str(s.get("n")), "" if score is None else f"{score:.3f}")
    console.print(table)
    if result.get("judge_audit"):
        console.print("LLM judges: " + result["judge_audit"]["verdict"], highlight=False, markup=False, soft_wrap=True)
    if result.get("simulated"):
        console.print(result["simulated"]["note"], highlight=False, markup=False, soft_wrap=True)
    console.print(f"wrote {paths['html']} and {paths['json']}")


def _nothing_to_report(study: Path, result: dict) -> str:
    """Why `dialeval report` writes no report: no judgments (of real annotators), each reason and
    what to do in sentences of their own."""
    from .report.methods_text import count_of

    simulated = result.get("simulated") or {}
    left_out = bool(simulated and not simulated.get("included") and simulated.get("judgments"))
    unranked = (result.get("no_ranking") or {}).get("note")
    if unranked:  # collecting cannot help before a second system has answers
        whose = "of real annotators " if left_out else ""
        return f"{study} holds no judgments {whose}yet, so there is nothing to report. {unranked}"
    if left_out:
        n, judged = simulated["annotators"], simulated["judgments"]
        sims = f"{count_of(n, 'simulated annotator')} ({count_of(judged, 'judgment')})"
        return (
            f"{study} holds no judgments of real annotators yet, so there is nothing to report. Its {sims} "
            f"of `dialeval simulate` {'is' if n == 1 else 'are'} left out: `dialeval report {study} "
            "--include-simulated` reports them"
        )
    stored_none = (
        f": its {count_of(simulated['annotators'], 'simulated annotator')} of `dialeval simulate` stored none. Collect"
        if simulated
        else "; collect"
    )
    return (
        f"{study} holds no judgments yet, so there is nothing to report{stored_none} some "
        f"(dialeval serve {study}, or dialeval simulate {study}) or import a data set"
    )


@app.command()
@friendly
def compare(
    study_a: Path = typer.Argument(..., help="first run (a study folder)"),
    study_b: Path = typer.Argument(..., help="second run of the same bots"),
    json_path: Path | None = typer.Option(None, "--json", help="write the comparison as JSON"),
) -> None:
    """Self-replication: correlation of two runs' system scores, overall and per criterion.

    Example: dialeval compare run1 run2 --json cmp.json
    """
    import json as json_lib

    from .analysis.compare import compare_runs
    from .jsonable import to_jsonable
    from .report.build import study_report

    result = to_jsonable(compare_runs(study_report(study_a), study_report(study_b)))
    if not result.get("systems"):
        raise DialevalError(
            f"{study_a} and {study_b} have no system in common (scored in both), so there is nothing to "
            f"compare; {study_a}: {', '.join(result.get('only_a') or []) or 'no scored systems'}; "
            f"{study_b}: {', '.join(result.get('only_b') or []) or 'no scored systems'}"
        )
    table = _table("system", str(study_a), str(study_b), title="scores in both runs")
    for s in result.get("systems", []):
        table.add_row(str(s["name"]), f"{s['a']:.3f}", f"{s['b']:.3f}")
    console.print(table)

    def r(value) -> str:
        return "not defined (needs 3 systems in common with varying scores)" if value is None else f"{value:.3f}"

    console.print(
        f"Pearson r = {r(result.get('pearson'))}, Spearman rho = {r(result.get('spearman'))} "
        f"({result.get('n')} systems in common)"
    )
    if result.get("criteria"):  # direct assessment: Ji et al. 2022, Table 3's r row, one per criterion
        criteria = _table("criterion", "Pearson r", "Spearman rho", "n", title="self-replication per criterion")
        fmt = lambda r: "" if r is None else f"{r:.3f}"  # noqa: E731
        for name, c in result["criteria"].items():
            criteria.add_row(name, fmt(c.get("pearson")), fmt(c.get("spearman")), str(c.get("n")))
        console.print(criteria)
    if json_path:
        json_path.write_text(json_lib.dumps(result, indent=2), encoding="utf-8")
        console.print(f"wrote {json_path}")


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
