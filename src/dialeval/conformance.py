"""The method conformance suite: `check_method(method)` runs the checks every evaluation method must
pass, built-in or from an outside package (in the spirit of scikit-learn's ``check_estimator``).

    from dialeval.conformance import check_method
    check_method("acute")                 # raises MethodConformanceError listing every failure
    check_method(METHOD, simulate=False)  # an outside package's Method, without the crowd run

What is checked, in order (a later check is skipped when an earlier one it needs failed):

1. ``parts``: every ``"module:attribute"`` the `Method` names imports.
2. ``signatures``: options is a pydantic model; the analysis takes the data set as its one required
   argument; figures and the answer's pairs take the report; the protocol is a `Protocol` subclass whose
   task template (and the instructions page) exist in its templates package; a simulation step takes
   (annotator, assignment id, page HTML).
3. ``options``: the options model validates its defaults and refuses an unknown key.
4. ``study template``: the study file `dialeval init` writes validates.
5. ``pages`` (a method with pages and a demo study): the demo study, with hostile text in its title,
   description and every stored conversation turn, is served in-process; the start, consent,
   instructions and task pages answer 200 and never show the hostile markup unescaped.
6. ``simulation`` (a method that declares one; ``simulate=True``): a small simulated crowd completes
   work on those pages without errors.
7. ``report``: the report builds from what was collected (or, without pages, from an empty data set
   of the method) and names the method.

Kept fast on purpose (a few seconds a method): two simulated annotators, the demo's small study.
"""

from __future__ import annotations

import inspect
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from .registry import Method, get, load_part

__all__ = ["HOSTILE", "MethodConformanceError", "check_method"]

# What an annotator, a bot or a study author could smuggle into a page; none of it may reach the
# browser as markup. (The web tests' full payload list is tests/web/xss_payloads.py.)
HOSTILE = '<script>alert("dialeval")</script><img src=x onerror=alert(1)>{{ 7*7 }}'
_RAW = ("<script>alert(", "<img src=x onerror")


class MethodConformanceError(AssertionError):
    """A method failed conformance checks; `failures` lists each as "check: what went wrong"."""

    def __init__(self, method: str, failures: list[str]):
        self.method, self.failures = method, failures
        super().__init__(f"method '{method}' fails {len(failures)} conformance check(s):\n  " + "\n  ".join(failures))


def check_method(
    method: Method | str, *, simulate: bool = True, annotators: int = 2, workdir: str | Path | None = None
) -> list[str]:
    """Run the conformance checks on a method (a `Method` or a registered id). Returns the names of
    the checks that ran and passed; raises MethodConformanceError listing every failure."""
    spec = get(method) if isinstance(method, str) else method
    failures: list[str] = []
    passed: list[str] = []

    def run(name: str, check: Callable[[], None]) -> bool:
        try:
            check()
        except Exception as exc:  # noqa: BLE001 - every failure is reported, not just the first
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
            return False
        passed.append(name)
        return True

    parts_ok = run("parts", lambda: _check_parts(spec))
    if parts_ok:
        run("signatures", lambda: _check_signatures(spec))
        run("options", lambda: _check_options(spec))
        run("study template", lambda: _check_template(spec))
    if parts_ok and spec.collectable and spec.demo is not None:
        with tempfile.TemporaryDirectory(prefix="dialeval-check-") as tmp:
            folder = Path(workdir or tmp) / spec.id.replace("/", "-")
            made = run("demo study", lambda: _make_hostile_demo(spec, folder))
            if made and run("pages", lambda: _check_pages(spec, folder)):
                if simulate and spec.simulation is not None:
                    run("simulation", lambda: _check_simulation(spec, folder, annotators))
                run("report", lambda: _check_report(spec, folder))
    elif parts_ok:
        run("report", lambda: _check_empty_report(spec))
    if failures:
        raise MethodConformanceError(spec.id, failures)
    return passed


# -- 1, 2: the parts and their shapes ----------------------------------------------------------------


def _part_names(spec: Method) -> dict[str, str]:
    named: dict[str, str | None] = {
        "options": spec.options,
        "analysis": spec.analysis,
        "protocol": spec.protocol,
        "figures": spec.figures,
        "judge": spec.judge,
        "answer_pairs": spec.answer_pairs,
        "generate": spec.generate,
        "planned": spec.planned,
        "examples": spec.examples,
        "settle": spec.settle,
        "simulation.step": spec.simulation.step if spec.simulation else None,
        "simulation.checks": spec.simulation.checks if spec.simulation else None,
        "planning.pilot": spec.planning.pilot if spec.planning else None,
    }
    named.update({f"exports[{k}]": v for k, v in spec.exports.items()})
    named.update({f"study_imports[{k}]": v for k, v in spec.study_imports.items()})
    return {k: v for k, v in named.items() if v}


def _check_parts(spec: Method) -> None:
    wrong = []
    for field, name in _part_names(spec).items():
        if ":" not in name:
            wrong.append(f"{field} = {name!r} is not 'module:attribute'")
            continue
        try:
            load_part(name)
        except (ImportError, AttributeError) as exc:
            wrong.append(f"{field} = {name!r} does not load ({type(exc).__name__}: {exc})")
    if wrong:
        raise AssertionError("; ".join(wrong))


def _required_positional(fn: Callable[..., Any]) -> int:
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return -1  # takes any number
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


def _takes(fn: Callable[..., Any], n: int, what: str) -> None:
    if not callable(fn):
        raise AssertionError(f"{what} is not callable")
    required = _required_positional(fn)
    if required not in (n, -1):
        raise AssertionError(f"{what} must take {n} argument(s) without defaults, takes {required}: {fn}")


def _check_signatures(spec: Method) -> None:
    from pydantic import BaseModel

    from .protocols.base import Protocol

    options = load_part(spec.options)
    if not (isinstance(options, type) and issubclass(options, BaseModel)):
        raise AssertionError(f"options {spec.options} is not a pydantic model")
    _takes(load_part(spec.analysis), 1, f"analysis {spec.analysis} (dataset)")
    if spec.figures:
        _takes(load_part(spec.figures), 1, f"figures {spec.figures} (report)")
    if spec.answer_pairs:
        _takes(load_part(spec.answer_pairs), 1, f"answer_pairs {spec.answer_pairs} (report)")
    if spec.simulation:
        _takes(load_part(spec.simulation.step), 3, f"simulation step {spec.simulation.step} (sim, assignment, html)")
    if spec.planning and spec.planning.pilot:
        _takes(load_part(spec.planning.pilot), 1, f"planning pilot reader {spec.planning.pilot} (report)")
    if spec.protocol:
        cls = load_part(spec.protocol)
        if not (isinstance(cls, type) and issubclass(cls, Protocol)):
            raise AssertionError(f"protocol {spec.protocol} is not a dialeval.plugin.Protocol subclass")
        if cls.method != spec.id:
            raise AssertionError(f"protocol {spec.protocol} says method {cls.method!r}, the Method {spec.id!r}")
        if not spec.templates:
            raise AssertionError("a method with pages names its templates package (Method.templates)")
        for page in (cls.template, spec.instructions):
            if page and not _template_file(spec.templates, page).is_file():
                raise AssertionError(f"template {page} is not in {spec.templates}/templates/")
        if not cls.template:
            raise AssertionError(f"protocol {spec.protocol} names no task template")


def _template_file(package: str, name: str) -> Path:
    from importlib import resources

    return Path(str(resources.files(package).joinpath("templates", name)))


# -- 3, 4: options and the study template ------------------------------------------------------------


def _check_options(spec: Method) -> None:
    from pydantic import ValidationError

    options = spec.load_options()
    options.model_validate({})  # every option has a default: a study file may leave the block out
    try:
        options.model_validate({"no_such_option_of_any_method": 1})
    except ValidationError:
        return
    raise AssertionError(f"{spec.options} accepts an unknown key (a misspelt option would pass unnoticed)")


def _template_data(spec: Method) -> dict[str, Any]:
    from importlib import resources

    package, _, name = str(spec.study_template).partition(":")
    data = yaml.safe_load(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise AssertionError(f"{spec.study_template} is not a mapping")
    return data


def _check_template(spec: Method) -> None:
    from .config import StudyConfig

    if spec.study_template is None:
        if spec.collectable:
            raise AssertionError("a method with pages gives a study template (dialeval init writes it)")
        return
    config = StudyConfig.model_validate(_template_data(spec))
    if config.method != spec.id:
        raise AssertionError(f"{spec.study_template} is a study of method {config.method!r}")


# -- 5: the pages, with hostile text ------------------------------------------------------------------


def _make_hostile_demo(spec: Method, folder: Path) -> None:
    from .demo import create_demo, demo_study_data
    from .study import open_study, write_study_file

    data = demo_study_data(spec.id)
    # the check is about the method, not the bots: the fast bundled bot stands in for the retrieval
    # one (names kept, so the demo's options that name bots still hold)
    for bot in data.get("bots") or []:
        if bot.get("type") == "retrieval":
            bot["type"] = "eliza"
    data["pages"] = {**(data.get("pages") or {}), "title": f"Study {HOSTILE}"}
    data["description"] = f"About {HOSTILE}"
    write_study_file(folder.parent / spec.id, data)
    create_demo(folder.parent, methods=(spec.id,))  # generates the demo's material for that study file
    made = folder.parent / spec.id
    if made != folder:
        made.rename(folder)
    opened = open_study(folder)
    try:
        db = opened.store
        for row in _conversations(opened):
            conv = db.get_conversation(opened.id, row)
            turns = [replace(t, text=f"{t.text} {HOSTILE}") for t in conv.turns]
            db.save_conversation(opened.id, replace(conv, turns=turns))
    finally:
        opened.close()


def _conversations(opened: Any) -> list[str]:
    from .store.facade import StudyStore

    return [str(c["id"]) for c in StudyStore(opened.store, opened.id).list_conversations()]


def _unescaped(html: str) -> list[str]:
    return [raw for raw in _RAW if raw in html]


def _check_pages(spec: Method, folder: Path) -> None:
    from fastapi.testclient import TestClient

    from .web.app import create_app

    app = create_app([folder])
    slug = next(iter(app.state.studies))
    client = TestClient(app, base_url="http://testserver")
    seen: dict[str, str] = {}

    def page(name: str, response: Any) -> str:
        if response.status_code != 200:
            raise AssertionError(f"{name} page answered {response.status_code}")
        seen[name] = response.text
        return str(response.text)

    start = page("start", client.get(f"/s/{slug}/"))
    if "/consent" not in str(client.get(f"/s/{slug}/").url):
        start = page("start", client.post(f"/s/{slug}/start", data={}))
    token = re.search(r'name="csrf" value="([^"]+)"', start)
    if token is None:
        raise AssertionError("the consent page has no CSRF field")
    page("instructions", client.post(f"/s/{slug}/consent", data={"csrf": token.group(1), "agree": "yes"}))
    page("after instructions", client.post(f"/s/{slug}/instructions", data={"csrf": token.group(1)}))
    task = page("task", client.get(f"/s/{slug}/task"))
    if "Study &lt;script&gt;" not in task and "Study &lt;script" not in task:
        raise AssertionError("the task page does not show the study's title (escaped)")
    shown = [f"{name}: {raw!r}" for name, html in seen.items() for raw in _unescaped(html)]
    if shown:
        raise AssertionError("hostile text reached a page as markup: " + "; ".join(shown))


# -- 6, 7: simulation and report -----------------------------------------------------------------------


def _check_simulation(spec: Method, folder: Path, annotators: int) -> None:
    from .simulate.crowd import simulate_study

    result = simulate_study(
        folder,
        annotators=annotators,
        seed=1,
        careless_share=0.0,
        concurrency=1,
        abandon_p=0.0,
        refresh_p=0.0,
        double_submit_p=0.0,
    )
    if result.errors or result.judgments_mismatch:
        raise AssertionError("; ".join([*result.errors, *result.judgments_mismatch][:5]))
    if not result.judgments_stored:
        raise AssertionError(f"{annotators} simulated annotators stored no judgment")


def _check_report(spec: Method, folder: Path) -> None:
    from .report.build import build_report
    from .study import open_study

    opened = open_study(folder)
    try:  # as `dialeval report` reads a study (report.build.study_report)
        if spec.settle:
            load_part(spec.settle)(opened)
        dataset = opened.store.load_dataset(opened.id, columns=spec.report_columns)
        config = opened.config.model_dump(mode="json")
    finally:
        opened.close()
    # few resamples: the check is that the report builds, not its intervals; the simulated crowd's
    # judgments are what there is to report on (a real study's report leaves them out)
    accepts = inspect.signature(spec.load_analysis()).parameters
    fast: dict[str, Any] = {k: v for k, v in {"n_boot": 20, "n_sim": 20}.items() if k in accepts}
    report = build_report(dataset, config, include_simulated=True, **fast)
    if report.get("method") != spec.id:
        raise AssertionError(f"the report names method {report.get('method')!r}")
    json.dumps(report, default=str)  # the report is written as JSON


def _check_empty_report(spec: Method) -> None:
    from .records import Dataset

    report = spec.load_analysis()(Dataset(method=spec.id))
    if not isinstance(report, dict):
        raise AssertionError(f"analysis {spec.analysis} returned {type(report).__name__}, not a dict")
