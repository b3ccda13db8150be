"""Build a study's report: the analysis dict plus provenance, then report.json, plots and index.html."""

from __future__ import annotations

import base64
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from .. import __version__
from ..analysis import analyze
from ..jsonable import to_jsonable
from ..records import Dataset
from . import plots
from .methods_text import collection_counts, methods_paragraph


def build_report(dataset: Dataset, config: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """The full report dict: the method's statistics (see README, 'The JSON contract') and provenance."""
    config = config if config is not None else dataset.meta.get("config", {})
    report = analyze(dataset, **options)
    counts = collection_counts(dataset)
    report["study"] = {
        "name": dataset.meta.get("study") or config.get("name"),
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "dialeval_version": __version__,
        "collected": counts,
        "methods": methods_paragraph(dataset.method, counts, config),
    }
    report["filtered_annotators"] = report.get("filtered_annotators") or _filtered(dataset)
    return to_jsonable(report)


def study_report(folder: str | Path) -> dict[str, Any]:
    """Open a study folder and build its report dict from everything stored."""
    from ..study import open_study

    opened = open_study(folder)
    try:
        dataset = opened.store.load_dataset(opened.id)
        config = opened.config.model_dump(mode="json")
    finally:
        opened.close()
    return build_report(dataset, config)


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
    method = report.get("method")
    figs: dict[str, Any] = {}
    if method in ("acute", "pairwise-turn"):
        figs["win-rates"] = plots.winrate_heatmap(report.get("matchups", []))
        figs["leaderboard"] = plots.leaderboard(report.get("leaderboard", []))
        if method == "pairwise-turn":
            curves = {}
            for m in report.get("matchups", []):
                pts = [
                    (t.get("turn"), t.get("win_rate_a"))
                    for t in m.get("per_turn", []) or []
                    if isinstance(t, dict) and t.get("win_rate_a") is not None
                ]
                if pts:
                    curves[f"{m['a']} over {m['b']}"] = pts
            figs["per-turn"] = plots.lines(
                curves, "Win rate per bot turn", "bot turn", "win rate", ylim=(0, 1), hline=0.5
            )
    elif method == "arena":
        figs["leaderboard"] = plots.leaderboard(report.get("systems", []), value="score")
        rows = [
            {"a": a, "b": b, "win_rate_a": rate}
            for a, columns in (report.get("win_rates") or {}).items()
            for b, rate in columns.items()
            if rate is not None and a < b
        ]
        figs["win-rates"] = plots.winrate_heatmap(rows, title="Win rate of row over column (ties as half wins)")
    elif method == "single-model":
        figs["success-rates"] = plots.grouped_bars(
            {s["name"]: s.get("success_rate", {}) for s in report.get("systems", [])},
            "SM-Turn success rate (all turns)",
            "share of replies marked",
        )
        figs["likert"] = plots.grouped_bars(
            {
                s["name"]: {q: v.get("mean") for q, v in (s.get("likert") or {}).items()}
                for s in report.get("systems", [])
            },
            "SM-Dialog Likert means (1–5)",
            "mean rating",
        )
    elif method == "spot-the-bot":
        figs["win-rates"] = plots.winrate_heatmap(report.get("win_rates", []), rate="win_rate")
        figs["survival"] = plots.lines(
            {k: [tuple(p) for p in v] for k, v in (report.get("survival", {}).get("curves") or {}).items()},
            "Turnbull survival: share of bot speakers not yet spotted",
            "exchanges",
            "survival",
            step=True,
            ylim=(0, 1.02),
        )
        ranks = [
            {
                "name": s["name"],
                "rating": -(s["rank_range"][0] + s["rank_range"][1]) / 2,
                "ci_low": -s["rank_range"][1],
                "ci_high": -s["rank_range"][0],
            }
            for s in report.get("systems", [])
            if s.get("rank_range")
        ]
        figs["rank-ranges"] = plots.leaderboard(ranks, title="Bootstrap rank ranges (>99.5%), shown as −rank")
    elif method == "direct-assessment":
        figs["z-scores"] = plots.grouped_bars(
            {s["name"]: s.get("z", {}) for s in report.get("systems", [])},
            "Standardised (z) scores per criterion, passing annotators",
            "mean z",
        )
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


def _png_base64(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def write_report(
    report: dict[str, Any],
    out_dir: str | Path | None = None,
    json_path: str | Path | None = None,
    html_path: str | Path | None = None,
) -> dict[str, Path]:
    """Write report.json, index.html (self-contained) and the plots as PNG and SVG; returns the paths."""
    import matplotlib.pyplot as plt

    out = Path(out_dir) if out_dir else Path(html_path or json_path or ".").parent
    out.mkdir(parents=True, exist_ok=True)
    json_file = Path(json_path) if json_path else out / "report.json"
    html_file = Path(html_path) if html_path else out / "index.html"
    json_file.parent.mkdir(parents=True, exist_ok=True)
    json_file.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    images = {}
    plot_dir = out / "plots"
    for name, fig in figures(report).items():
        plot_dir.mkdir(exist_ok=True)
        fig.savefig(plot_dir / f"{name}.png", dpi=110)
        fig.savefig(plot_dir / f"{name}.svg")
        images[name] = _png_base64(fig)
        plt.close(fig)
    env = Environment(loader=PackageLoader("dialeval.report", "templates"), autoescape=select_autoescape())
    env.filters["num"] = _num
    html = env.get_template("report.html").render(report=report, images=images, sections=_sections(report))
    html_file.parent.mkdir(parents=True, exist_ok=True)
    html_file.write_text(html, encoding="utf-8")
    return {"json": json_file, "html": html_file, "plots": plot_dir}


SECTION_TITLES = {
    "systems": "Systems, best first",
    "matchups": "Pairwise matchups",
    "win_rates": "Pairwise win rates",
    "leaderboard": "Bradley–Terry leaderboard",
    "pairwise": "Pairwise significance",
    "filtered_annotators": "Filtered annotators",
    "excluded": "Excluded annotators",
    "ttests": "t-tests between bots",
    "effective_win_rates": "Effective win rates (bootstrap)",
    "agreement": "Agreement",
    "cox": "Cox proportional hazards per system",
    "time_to_significance": "Time to significance",
    "question_agreement": "Agreement per question phrasing",
    "stopping": "Adaptive stopping",
}
SKIP = {"method", "study", "systems", "by_question"}


def _sections(report: dict[str, Any]) -> list[tuple[str, Any]]:
    """The report's other keys in a stable order, each rendered as a table or a value list."""
    keys = [k for k in SECTION_TITLES if k in report and k not in SKIP]
    keys += [k for k in report if k not in SECTION_TITLES and k not in SKIP]
    return [(SECTION_TITLES.get(k, k.replace("_", " ").capitalize()), report[k]) for k in keys]


def _num(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, float):
        if abs(value) >= 1000 or value == int(value) and abs(value) > 10:
            return f"{value:,.1f}"
        return f"{value:.4g}" if abs(value) < 1e-3 and value != 0 else f"{value:.3f}"
    return str(value)
