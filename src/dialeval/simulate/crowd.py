"""A simulated crowd working through a study in the real web app, and the simulated demo.

    result = simulate_study("my-study", annotators=40, seed=0)
    print(result.summary())

``simulate_study`` writes the latent truth to ``<study>/simulation/truth.json`` (so a report can be
checked against it), starts the app in-process unless ``base_url`` names a running server, runs
the simulated annotators concurrently (a bounded thread pool, one HTTP client each) and then
reads back from the store what was kept: judgments per annotator, flags and the Direct
Assessment QC test, so it can say how many careless annotators the quality control caught.
"""

from __future__ import annotations

import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DialevalError
from ..registry import get as get_method
from ..registry import load_part
from ..store import work
from .annotator import AnnotatorLog, SimulatedAnnotator
from .model import SimTruth, sample_profile


@dataclass
class SimulationResult:
    """What a simulated crowd did to one study, and what the store kept."""

    method: str
    folder: str
    annotators: int
    careless: int
    careless_judged: int  # careless annotators who left at least one judgment (something to filter)
    careless_caught: int  # careless annotators flagged / blocked, or failing the DA QC test
    careful_flagged: int  # careful annotators caught anyway (false alarms)
    judgments_submitted: int  # accepted by the server, each counted once
    judgments_stored: int  # in the store for the simulated annotators
    judgments_mismatch: list[str]  # annotators whose stored count differs from what they submitted
    completed_units: int
    abandoned: int
    returned: int
    refreshed: int
    double_submits: int
    messages: int
    finished: int  # annotators who reached the done page
    refused: int  # inputs the server refused (4xx), e.g. a careless no-reason justification
    errors: list[str]  # what went wrong and should not have
    annotator_hours: float  # simulated time spent judging
    truth: dict[str, Any]
    reasons: dict[str, int] = field(default_factory=dict)  # QC reasons over careless annotators
    logs: list[AnnotatorLog] = field(default_factory=list, repr=False)
    report_dir: str | None = None
    recovery: dict[str, Any] | None = None  # recovered_order() of the written report

    @property
    def judgments(self) -> int:
        """Judgments stored for the simulated annotators."""
        return self.judgments_stored

    @property
    def catch_rate(self) -> float | None:
        """Share of the careless annotators with judgments whom the quality control caught."""
        return self.careless_caught / self.careless_judged if self.careless_judged else None

    @property
    def false_alarm_rate(self) -> float | None:
        careful = self.annotators - self.careless
        return self.careful_flagged / careful if careful else None

    def summary(self) -> str:
        from ..report.methods_text import count_of

        rate = f"{100 * self.catch_rate:.0f}%" if self.catch_rate is not None else "n/a"
        return (
            f"{self.method}: {count_of(self.annotators, 'simulated annotator')} ({self.careless} careless, "
            f"{self.careless_judged} of them judged, {rate} of those caught, "
            f"{self.careful_flagged} careful flagged); {self.judgments_submitted} judgments submitted, "
            f"{self.judgments_stored} stored; {self.completed_units} units completed, {self.abandoned} "
            f"abandoned ({self.returned} came back), {self.refreshed} refreshes, {self.double_submits} double "
            f"submits; {len(self.errors)} errors"
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("logs")
        data["catch_rate"] = self.catch_rate
        data["false_alarm_rate"] = self.false_alarm_rate
        return data


def study_truth(config, strengths: dict[str, float] | None = None) -> SimTruth:
    """The latent truth of a study: the given strengths, else the bots' order (first = strongest)."""
    qc = [b.name for b in config.bots if b.type == "degraded"]
    names = [b.name for b in config.bots]
    return SimTruth.from_bots(names, strengths, qc_bots=qc)


def simulate_study(
    folder: str | Path,
    annotators: int = 40,
    seed: int = 0,
    careless_share: float = 0.15,
    base_url: str | None = None,
    *,
    strengths: dict[str, float] | None = None,
    concurrency: int = 8,
    slug: str | None = None,
    abandon_p: float = 0.05,
    refresh_p: float = 0.1,
    double_submit_p: float = 0.05,
    spammer_share: float = 0.0,
    adversary_share: float = 0.0,
    adversary_target: str | None = None,
) -> SimulationResult:
    """Run `annotators` simulated people (a `careless_share` of them careless) through the study.

    A `spammer_share` of them answer at random but otherwise behave (real chat messages and
    reasons: the quality control does not catch them); an `adversary_share` always vote for one bot,
    `adversary_target` (default: the weakest bot of the truth) when it is one of the two, honestly
    otherwise. Careless, spammers and adversaries are disjoint; who was what is saved in
    ``<folder>/simulation/annotators.json`` (by the annotator's external id, as reports name them).

    Without `base_url` the real app is started in this process (simulate/server.py). The truth
    (per-bot strengths; default from the bots' order in study.yaml) is saved to
    ``<folder>/simulation/truth.json``.
    """
    from ..corpus import load_corpus
    from ..study import no_tasks_reason, open_study
    from ..web.served import slugify
    from .server import running_app

    folder = Path(folder)
    for name, share in (
        ("careless_share", careless_share),
        ("spammer_share", spammer_share),
        ("adversary_share", adversary_share),
    ):
        if not 0 <= share <= 1:
            raise ValueError(f"{name} must be between 0 and 1")
    if careless_share + spammer_share + adversary_share > 1:
        raise ValueError("careless, spammer and adversary shares add up to more than 1")
    opened = open_study(folder)
    try:
        config = opened.config
        if get_method(config.method).simulation is None:
            raise DialevalError(f"method '{config.method}' has no simulated annotators (it has no annotation pages)")
        if strengths is not None:
            bots = [b.name for b in config.bots if b.type != "degraded"]
            unknown = sorted(set(strengths) - set(bots))
            missing = [b for b in bots if b not in strengths]
            if unknown or missing:
                raise DialevalError(
                    "simulated strengths name every bot of the study once"
                    + (f"; not bots of this study: {', '.join(unknown)}" if unknown else "")
                    + (f"; missing: {', '.join(missing)}" if missing else "")
                    + f" (its bots: {', '.join(bots)})"
                )
        truth = study_truth(config, strengths)
        before = len(work.list_annotators(opened.store, opened.id))
        rng = random.Random(f"{seed}:crowd")
        n_careless = round(annotators * careless_share)
        careless = set(rng.sample(range(annotators), n_careless))
        rest = [i for i in range(annotators) if i not in careless]
        spammers = set(rng.sample(rest, min(len(rest), round(annotators * spammer_share))))
        rest = [i for i in rest if i not in spammers]
        adversaries = set(rng.sample(rest, min(len(rest), round(annotators * adversary_share))))
        target = adversary_target or (truth.order()[-1] if truth.order() else None)
        if adversaries and target not in truth.strengths:
            raise DialevalError(
                f"--adversary-target '{target}' is not a bot of this study ({', '.join(truth.order())})"
            )
        profiles = [
            sample_profile(
                random.Random(f"{seed}:profile:{i}"),
                f"s{seed}r{before}-{i}",
                i in careless,
                abandon_p=abandon_p,
                refresh_p=refresh_p,
                double_submit_p=double_submit_p,
            )
            for i in range(annotators)
        ]
        for i in spammers:
            profiles[i].role = "spammer"
        for i in adversaries:
            profiles[i].role, profiles[i].favourite = "adversary", target
        simulation = get_method(config.method).simulation
        corpus = load_corpus() if simulation is not None and simulation.corpus else None
        study_slug = slug or slugify(config.name)

        def run_all(url: str) -> list[AnnotatorLog]:
            def one(i: int) -> AnnotatorLog:
                sim = SimulatedAnnotator(
                    url,
                    study_slug,
                    config.method,
                    opened.store,
                    opened.id,
                    truth,
                    profiles[i],
                    random.Random(f"{seed}:annotator:{i}"),
                    corpus,
                )
                return sim.run()

            with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
                return list(pool.map(one, range(annotators)))

        def ready_or_stop() -> None:
            # after the units are built (by the app started here, or the running server)
            reason = no_tasks_reason(opened.store, opened.id, config, folder)
            if reason is not None:
                raise DialevalError(f"{reason}; no simulated annotator was sent")
            truth.save(folder)  # once the options and the study are known good: a refused run leaves nothing

        if base_url is None:
            with running_app([folder]) as url:
                ready_or_stop()
                logs = run_all(url)
        else:
            ready_or_stop()
            logs = run_all(base_url)
        _save_roles(opened, folder, profiles, logs)
        return collect(opened, config.method, folder, logs, truth)
    finally:
        opened.close()


ROLES_FILE = Path("simulation") / "annotators.json"


def _save_roles(opened, folder: Path, profiles: list, logs: list[AnnotatorLog]) -> None:
    """Who was careless, a spammer or an adversary, by external id (merged with earlier runs)."""
    import json

    external = {r["id"]: r["external_id"] for r in work.list_annotators(opened.store, opened.id)}
    path = folder / ROLES_FILE
    roles = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    for profile, log in zip(profiles, logs):
        if log.annotator_id in external:
            role = "careless" if profile.careless else profile.role
            roles[str(external[log.annotator_id])] = {
                "name": profile.name,
                "role": role,
                "favourite": profile.favourite,
            }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(roles, indent=2, sort_keys=True), encoding="utf-8")


def collect(opened, method: str, folder: Path, logs: list[AnnotatorLog], truth: SimTruth) -> SimulationResult:
    """Compare what the simulated annotators did with what the store kept."""
    store, sid = opened.store, opened.id
    spec = get_method(method)
    if spec.settle:  # the crowd has gone: what it still held (an arena vote inside its window) is final
        load_part(spec.settle)(opened, gone={log.annotator_id for log in logs if log.annotator_id is not None})
    simulation = spec.simulation
    checks = load_part(simulation.checks) if simulation is not None and simulation.checks else None
    stored = Counter(j.annotator_id for j in work.list_judgments(store, sid, include_excluded=True))
    rows = {r["id"]: r for r in work.list_annotators(store, sid)}
    caught_ids: set[int] = set()
    reasons: Counter[str] = Counter()
    for log in logs:
        row = rows.get(log.annotator_id) if log.annotator_id is not None else None
        if row is None:
            continue
        why = list(row["reasons"]) if row["status"] != "active" else []
        if checks is not None:  # the method's own quality control (Direct Assessment's QC test)
            why.extend(checks(store, sid, log.annotator_id))
        if why:
            caught_ids.add(log.annotator_id)
            if log.careless:
                reasons.update(set(why))
    mismatch = []
    for log in logs:
        have = stored.get(log.annotator_id, 0) if log.annotator_id is not None else 0
        if have != log.judgments:
            mismatch.append(f"{log.name}: submitted {log.judgments}, stored {have}")
    errors = [f"{log.name}: {e}" for log in logs for e in log.errors]
    careless_logs = [log for log in logs if log.careless]
    return SimulationResult(
        method=method,
        folder=str(folder),
        annotators=len(logs),
        careless=len(careless_logs),
        careless_judged=sum(1 for log in careless_logs if stored.get(log.annotator_id, 0) > 0),
        careless_caught=sum(
            1 for log in careless_logs if log.annotator_id in caught_ids and stored.get(log.annotator_id, 0) > 0
        ),
        careful_flagged=sum(1 for log in logs if not log.careless and log.annotator_id in caught_ids),
        judgments_submitted=sum(log.judgments for log in logs),
        judgments_stored=sum(stored.get(log.annotator_id, 0) for log in logs if log.annotator_id is not None),
        judgments_mismatch=mismatch,
        completed_units=sum(log.units_completed for log in logs),
        abandoned=sum(log.abandoned for log in logs),
        returned=sum(log.returned for log in logs),
        refreshed=sum(log.refreshed for log in logs),
        double_submits=sum(log.double_submits for log in logs),
        messages=sum(log.messages for log in logs),
        finished=sum(log.finished for log in logs),
        refused=sum(len(log.refused) for log in logs),
        errors=errors,
        annotator_hours=sum(log.seconds for log in logs) / 3600.0,
        truth=truth.to_json(),
        reasons=dict(reasons),
        logs=logs,
    )


def recovered_order(report: dict[str, Any], truth: SimTruth | dict[str, Any]) -> dict[str, Any]:
    """Compare a report's system scores with the simulated truth.

    {"truth_order", "report_order", "spearman", "exact"}: the bots of the truth (QC bots and
    people left out) ordered by the report's ``systems[].score`` (higher is better in every
    method's report), and Spearman's rho between report scores and true strengths.
    """
    from scipy.stats import spearmanr

    strengths = truth.strengths if isinstance(truth, SimTruth) else truth["strengths"]
    scores = {s["name"]: s.get("score") for s in report.get("systems", []) if s.get("name") in strengths}
    scores = {k: v for k, v in scores.items() if v is not None}
    truth_order = sorted(strengths, key=lambda b: -strengths[b])
    report_order = sorted(scores, key=lambda b: -scores[b])
    names = [b for b in truth_order if b in scores]
    rho = None
    true_values, report_values = [strengths[b] for b in names], [scores[b] for b in names]
    # undefined (None, not NaN and a scipy warning) when either side has no spread, e.g. a report
    # whose systems all scored the same after a handful of judgments
    if len(names) >= 2 and len(set(true_values)) > 1 and len(set(report_values)) > 1:
        rho = float(spearmanr(true_values, report_values).statistic)
    return {
        "truth_order": truth_order,
        "report_order": report_order,
        "spearman": rho,
        "exact": report_order == truth_order,
    }


def write_study_report(folder: str | Path, worker: Any = None) -> Path:
    """Analyse the study and write <folder>/report/ (report.json, index.html, plots); `worker`: a
    figure worker (report/figure_worker.py) to draw the figures, else they are drawn here."""
    from ..report import study_report, write_report

    report = study_report(folder)
    out = Path(folder) / "report"
    write_report(report, out, worker=worker)
    return out


def simulate_demo(
    out: str | Path,
    annotators: int = 20,
    seed: int = 0,
    methods: tuple[str, ...] | None = None,
    careless_share: float = 0.15,
    concurrency: int = 8,
) -> dict[str, SimulationResult]:
    """Create the demo studies (demo.create_demo), run a simulated crowd on each through one running
    app, and write each study's report into <study>/report/."""
    from ..demo import create_demo
    from ..study import load_study
    from ..web.served import slugify
    from .server import running_app

    folders = create_demo(out, methods=methods)
    results: dict[str, SimulationResult] = {}
    with running_app(folders) as url:
        slugs: set[str] = set()
        for folder in folders:
            config = load_study(folder)
            slug = base = slugify(config.name)  # the app's own rule for repeated names
            n = 2
            while slug in slugs:
                slug, n = f"{base}-{n}", n + 1
            slugs.add(slug)
            results[config.method] = simulate_study(
                folder,
                annotators=annotators,
                seed=seed,
                careless_share=careless_share,
                base_url=url,
                slug=slug,
                concurrency=concurrency,
            )
    for result in results.values():
        out = Path(result.folder) / "report"
        try:
            write_study_report(result.folder)
        except Exception as exc:  # noqa: BLE001 - one failing plot must not lose the other reports
            result.errors.append(f"report: {type(exc).__name__}: {exc}")
        result.report_dir = str(out)
        report_json = out / "report.json"
        if report_json.exists():
            import json

            result.recovery = recovered_order(json.loads(report_json.read_text(encoding="utf-8")), result.truth)
    return results
