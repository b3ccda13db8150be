"""Build a study's report: the analysis dict plus provenance, then report.json, plots and index.html."""

from __future__ import annotations

import base64
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from .. import __version__
from ..analysis import analyze
from ..jsonable import to_jsonable
from ..records import Dataset
from .answer import answer
from .methods_text import collection_counts, count_of, methods_paragraph


def build_report(
    dataset: Dataset,
    config: dict[str, Any] | None = None,
    include_judges: bool = False,
    include_simulated: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """The full report dict: the method's statistics (docs/reference/report-json.md) and provenance.

    LLM judges' judgments are kept out of the statistics (they get the `judge_audit` section) unless
    `include_judges`: then their verdicts count like an annotator's. Simulated annotators
    (`dialeval simulate`) are kept out beside real ones unless `include_simulated`; see `simulated_part`.
    """
    import warnings

    from ..records import is_judge_annotator

    config = config if config is not None else dataset.meta.get("config", {})
    dataset, simulated = simulated_part(dataset, include_simulated)
    has_judges = any(is_judge_annotator(a) for a in dataset.annotators)
    everything = dataset
    if has_judges:  # the audit's statistics (scipy, scikit-learn) are imported only when needed
        from ..judges.audit import judge_audit, people_only

        dataset = people_only(dataset, include_judges)
    # Numerical warnings of the statistics (e.g. a t-test on identical ratings) belong in the report,
    # next to the numbers they concern, not on the user's terminal with a library's source path.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = analyze(dataset, **options)
    notes = sorted({f"{w.category.__name__}: {w.message}".translate(_PLAIN) for w in caught})
    if notes:
        report["analysis_warnings"] = notes
    counts = collection_counts(dataset)
    if not counts["bots"]:  # judgments without conversations (arena imports): the systems judged
        counts["bots"] = sorted(str(s["name"]) for s in report.get("systems") or [] if isinstance(s, dict))
    report["study"] = {
        "name": dataset.meta.get("study") or config.get("name"),
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "dialeval_version": __version__,
        "collected": counts,
        "methods": methods_paragraph(dataset.method, counts, config),
    }
    report["filtered_annotators"] = report.get("filtered_annotators") or _filtered(dataset)
    from ..quality.typing import summarise as typing_summary

    flag_at = float(((config or {}).get("quality") or {}).get("paste_flag") or 0.5)
    typed = typing_summary(dataset, flag_at)
    if typed is not None:
        report["input_signals"] = typed
    shortened = shortened_replies(dataset)
    if shortened:
        report["shortened_replies"] = shortened
    if simulated:
        report["simulated"] = simulated
    if has_judges:
        report["judges_included"] = include_judges
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report["judge_audit"] = judge_audit(everything, seed=options.get("seed", 0))
    examples = _examples(everything, report, options.get("exclude_annotators"))
    if examples:
        report["examples"] = examples
    report = to_jsonable(report)
    report["answer"] = to_jsonable(answer(report))
    return report


def simulated_part(dataset: Dataset, include: bool = False) -> tuple[Dataset, dict[str, Any] | None]:
    """The data set the statistics see, and what the report says about simulated annotators.

    A study whose annotators are all simulated (the demo, a `simulate --copy`) is reported as it
    is: reporting the simulated crowd is the point. Beside real annotators, simulated ones are left
    out unless `include`. Either way the report says so (None: no simulated data)."""
    from dataclasses import replace

    from ..records import is_judge_annotator, is_simulated_annotator

    sims = {a.id for a in dataset.annotators if is_simulated_annotator(a)}
    if not sims:
        return dataset, None
    real = [a for a in dataset.annotators if a.id not in sims and not is_judge_annotator(a)]
    judged = sum(1 for j in dataset.judgments if j.annotator_id in sims)
    info: dict[str, Any] = {"annotators": len(sims), "judgments": judged, "real_annotators": len(real)}
    simulated = f"{count_of(len(sims), 'simulated annotator')} ({count_of(judged, 'judgment')})"
    if not real:
        info["included"] = True
        info["note"] = (
            f"All data of this report are simulated: {count_of(len(sims), 'simulated annotator')} of "
            "`dialeval simulate` (no real annotator), for planning only."
        )
        return dataset, info
    info["included"] = include
    if include:
        info["note"] = (
            f"This report includes {simulated} beside {count_of(len(real), 'real annotator')} "
            "(--include-simulated): its statistics mix simulated and real data."
        )
        return dataset, info
    info["note"] = (
        f"{simulated} of `dialeval simulate` are left out of this report; "
        "`dialeval report --include-simulated` counts them."
    )
    kept = replace(
        dataset,
        annotators=[a for a in dataset.annotators if a.id not in sims],
        judgments=[j for j in dataset.judgments if j.annotator_id not in sims],
    )
    return kept, info


def _examples(everything: Dataset, report: dict[str, Any], exclude: list[str] | None) -> Any:
    """The method's example browser (Method.examples), from every judgment: judges' verdicts too."""
    from ..registry import all_methods, load_part

    spec = all_methods().get(str(everything.method))
    return load_part(spec.examples)(everything, report, exclude) if spec is not None and spec.examples else None


_PLAIN = str.maketrans("[]{}", "()()")  # a warning's text is prose on the page, never JSON-looking


def study_report(folder: str | Path, include_judges: bool = False, include_simulated: bool = False) -> dict[str, Any]:
    """Open a study folder and build its report dict from everything stored."""
    from ..registry import all_methods, load_part
    from ..study import open_study

    opened = open_study(folder)
    try:
        method = all_methods().get(opened.config.method)
        if method is not None and method.settle:  # e.g. arena votes whose change window is over
            load_part(method.settle)(opened)
        # the judgment fields the method's analysis reads, as columns (a million battles: not a
        # million objects); None: whole judgments
        columns = method.report_columns if method else None
        all_turns = method.report_reads_turns if method else True
        dataset = opened.store.load_dataset(opened.id, columns=columns, all_turns=all_turns)
        config = opened.config.model_dump(mode="json")
    finally:
        opened.close()
    return build_report(dataset, config, include_judges=include_judges, include_simulated=include_simulated)


def shortened_replies(dataset: Dataset) -> dict[str, int]:
    """Per bot, its replies that workers saw cut at limits.bot_reply_chars (textclean.cut_reply):
    every candidate of a turn (PW-Turn, Arena) counts, else the turn itself."""
    from ..textclean import was_cut

    counts: dict[str, int] = {}
    for conv in dataset.conversations:
        for t in conv.turns:
            replies = [(c.get("bot"), c.get("text")) for c in t.candidates or [] if isinstance(c, dict)]
            for bot, text in replies or [(t.bot, t.text)]:
                if bot and isinstance(text, str) and was_cut(text):
                    counts[str(bot)] = counts.get(str(bot), 0) + 1
    return dict(sorted(counts.items()))


def _filtered(dataset: Dataset) -> list[dict[str, Any]]:
    out = []
    for a in dataset.annotators:
        status = a.meta.get("status", "active")
        if status != "active":
            out.append({"id": a.id, "status": status, "reason": "; ".join(a.meta.get("qc", {}).get("reasons", []))})
    return out


# -- figures --------------------------------------------------------------------------------------------
def figures(report: dict[str, Any]) -> dict[str, Any]:
    """name -> matplotlib figure, for whatever this report has to draw."""
    from ..registry import all_methods
    from . import plots  # matplotlib: imported when a figure is drawn, not by compare or report.json alone

    method = all_methods().get(str(report.get("method")))
    figures = method.load_figures() if method else None
    figs: dict[str, Any] = figures(report) if figures else {}
    tts = report.get("time_to_significance")
    if isinstance(tts, list):
        curves = {}
        for entry in tts:
            pts = entry.get("curve") if isinstance(entry, dict) else None
            if pts and isinstance(pts[0], dict) and "hours" in pts[0]:
                label = f"{entry.get('a')} vs {entry.get('b')}" if "a" in entry else str(entry.get("name", ""))
                curves[label] = [(p["hours"], p.get("p_significant", p.get("power"))) for p in pts]
        figs["time-to-significance"] = plots.lines(
            curves,
            "Probability of p < 0.05 vs annotator-hours",
            "annotator-hours (log scale)",
            "probability",
            ylim=(0, 1.02),
            logx=True,
            stop_at=0.99,
            hline=0.8,
        )
    return {k: v for k, v in figs.items() if v is not None}


def _render(fig, fmt: str) -> bytes:
    buf = io.BytesIO()
    if fmt == "png":
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")  # legends sit outside the axes
    else:  # no date, and ids from a fixed salt (else random): the same figure gives the same bytes
        from matplotlib import rc_context

        with rc_context({"svg.hashsalt": "dialeval"}):
            fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buf.getvalue()


class FigureDrawer(Protocol):
    """Draws a report's figures elsewhere (the report command's worker, figure_worker.py): `send` the
    report, write the rest, then `receive` the rendered figures; False / None: draw them here."""

    def send(self, report: dict[str, Any], png: bool) -> bool: ...

    def receive(self) -> dict[str, tuple[bytes, bytes | None]] | None: ...


def rendered_figures(report: dict[str, Any], png: bool = False) -> dict[str, tuple[bytes, bytes | None]]:
    """name -> (SVG bytes, PNG bytes when `png` else None) of the report's figures; the same code in
    this process and in the report command's figure worker (figure_worker.py)."""
    import warnings

    # The plots are laid out for many systems (legends outside the axes, sized labels); what matplotlib
    # still has to say about layout is not for the user's terminal.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return {name: rendered_figure(fig, png) for name, fig in figures(report).items()}


def rendered_figure(fig, png: bool = False) -> tuple[bytes, bytes | None]:
    """One figure's SVG bytes and, when `png`, its PNG bytes. One render by default (a third of the
    figures' time on a small report): the same SVG bytes go to the file and into the page; a PNG is a
    second render, only when asked for."""
    return _render(fig, "svg"), _render(fig, "png") if png else None


def write_report(
    report: dict[str, Any],
    out_dir: str | Path | None = None,
    json_path: str | Path | None = None,
    html_path: str | Path | None = None,
    png: bool = False,
    worker: FigureDrawer | None = None,
) -> dict[str, Path]:
    """Write report.json, index.html (self-contained) and the plots as SVG (and PNG when `png`);
    returns the paths. `worker`: a figure worker (figure_worker.py) that draws the figures while this
    process writes the rest; without one, or when it fails, they are drawn here (the same bytes)."""
    out = Path(out_dir) if out_dir else Path(html_path or json_path or ".").parent
    out.mkdir(parents=True, exist_ok=True)
    json_file = Path(json_path) if json_path else out / "report.json"
    html_file = Path(html_path) if html_path else out / "index.html"
    sent = worker is not None and worker.send(report, png)
    json_file.parent.mkdir(parents=True, exist_ok=True)
    json_file.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    env = Environment(loader=PackageLoader("dialeval.report", "templates"), autoescape=select_autoescape())
    template = env.get_template("report.html")
    body, systems, extra_style = Markup(_body(report)), Markup(_systems(report)), Markup(_extra_style(report))
    rendered = worker.receive() if sent and worker is not None else None
    if rendered is None:
        rendered = rendered_figures(report, png)
    images = {}
    plot_dir = out / "plots"
    for name, (svg, png_bytes) in rendered.items():
        plot_dir.mkdir(exist_ok=True)
        (plot_dir / f"{name}.svg").write_bytes(svg)
        images[name] = base64.b64encode(svg).decode("ascii")
        if png_bytes is not None:
            (plot_dir / f"{name}.png").write_bytes(png_bytes)
        else:  # an earlier run's PNG would show an older figure beside this one
            (plot_dir / f"{name}.png").unlink(missing_ok=True)
    html = template.render(
        report=report,
        images=images,
        captions=FIGURE_CAPTIONS,
        body=body,
        systems=systems,
        extra_style=extra_style,
    )
    html_file.parent.mkdir(parents=True, exist_ok=True)
    html_file.write_text(html, encoding="utf-8")
    return {"json": json_file, "html": html_file, "plots": plot_dir}


FIGURE_CAPTIONS = {
    "win-rates": "Win rate of the row system over the column system, systems in rank order.",
    "leaderboard": "Bradley–Terry ratings with 95% bootstrap intervals, best at the top.",
    "per-turn": "Win rate per bot turn, per pair.",
    "success-rates": "SM-Turn: share of bot replies marked with each quality.",
    "likert": "SM-Dialog: mean 1–5 rating per question.",
    "survival": "Share of bot speakers not yet spotted after k exchanges (higher is more human-like).",
    "rank-ranges": "Bootstrap rank ranges: each bar spans the ranks a system took; 1 is best.",
    "z-scores": "Mean standardised (z) score per criterion; higher is better.",
    "time-to-significance": "Probability that a pair reaches p < 0.05 as annotator-hours grow.",
}

SECTION_TITLES = {
    "no_ranking": "Why there is no ranking",
    "matchups": "Pairwise matchups",
    "win_rates": "Pairwise win rates",
    "grid": "Win-rate grid",
    "leaderboard": "Bradley–Terry leaderboard",
    "pairwise": "Pairwise significance",
    "filtered_annotators": "Filtered annotators",
    "excluded": "Left out of the statistics",
    "ttests": "t-tests between bots",
    "effective_win_rates": "Effective win rates (bootstrap)",
    "agreement": "Agreement",
    "aa_test": "A/A check",
    "cox": "Cox proportional hazards per system",
    "time_to_significance": "Time to significance",
    "question_agreement": "Agreement per question phrasing",
    "stopping": "Adaptive stopping",
    "analysis_warnings": "Warnings from the statistics",
    "judge_audit": "LLM judges beside people: agreement and bias audit",
    "input_signals": "How annotators entered their texts: pasted or typed, speed, echo of the bots' replies",
    "shortened_replies": "Bot replies shortened at limits.bot_reply_chars (per bot; shown marked to the workers)",
    "simulated": "Simulated annotators",
    "examples": "Examples: the judged items",
    "people": "People with each other: agreement and length preference",
}
# Shown elsewhere on the page (title, answer, methods, systems table) or duplicated by another key.
SKIP = {"method", "study", "systems", "answer", "grid_formatted", "by_question", "question", "examples"}


def _extra_style(report: dict[str, Any]) -> str:
    """Style rules of sections that carry their own (the example browser's filters)."""
    if not isinstance(report.get("examples"), dict):
        return ""
    from .examples_section import examples_css

    return examples_css(report["examples"])


def _systems(report: dict[str, Any]) -> str:
    from .render import render

    if not report.get("systems"):
        from html import escape

        unranked = (report.get("no_ranking") or {}).get("note")
        return f'<p class="note">{escape(unranked) if unranked else "No judgments yet."}</p>'
    return render("systems", report["systems"], "systems")


def _body(report: dict[str, Any]) -> str:
    """Every other key of the report, each under its title, rendered by `render` (never as JSON)."""
    from html import escape

    from .render import render

    order: list[str] = [str(s.get("name")) for s in report.get("systems") or [] if isinstance(s, dict)]
    scalars = {
        k: v
        for k, v in report.items()
        if k not in SKIP
        and (
            v is None
            or isinstance(v, (str, int, float, bool))
            or (isinstance(v, list) and len(v) <= 8 and all(isinstance(x, (str, int, float)) for x in v))
        )
    }
    keys = [k for k in SECTION_TITLES if k in report and k not in SKIP and k not in scalars]
    keys += [k for k in report if k not in SECTION_TITLES and k not in SKIP and k not in scalars]
    parts = []
    if scalars:
        from .render import mapping_table

        parts.append("<h2>Key numbers</h2>" + mapping_table(".", scalars))
    for key in keys:
        value = report[key]
        if value in (None, [], {}):
            continue
        title = SECTION_TITLES.get(key, key.replace("_", " ").capitalize())
        if key == "judge_audit":  # its own layout: the verdict, then people beside each judge
            from .judge_section import judge_audit_html

            parts.append(f'<h2 id="{escape(key)}">{escape(title)}</h2>{judge_audit_html(value)}')
            continue
        parts.append(f'<h2 id="{escape(key)}">{escape(title)}</h2>{render(key, value, key, order)}')
    by_question = report.get("by_question") or {}
    for question, sub in by_question.items():
        if question == report.get("question") or not isinstance(sub, dict):
            continue
        parts.append(f"<h2>Question: {escape(str(question))}</h2>")
        for key in ("systems", "matchups"):
            if sub.get(key):
                parts.append(render(f"by_question.{question}.{key}", sub[key], key, order))
    if isinstance(report.get("examples"), dict):  # last: the items themselves, after every number
        from .examples_section import examples_html

        parts.append(f'<h2 id="examples">{escape(SECTION_TITLES["examples"])}</h2>{examples_html(report["examples"])}')
    return "".join(parts)
