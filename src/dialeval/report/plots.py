"""Plots of a report dict, as matplotlib figures (saved as PNG/SVG files and inlined in the HTML).

Every function takes parts of the JSON report, not DataFrames, so a report can be redrawn from
report.json alone. A function returns None when the report has nothing to draw.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# Figures are made from matplotlib's Figure class, not through pyplot: no GUI backend is chosen or
# imported, nothing is kept in pyplot's figure registry (nothing to close), and the report command
# starts faster. savefig picks the Agg (PNG) or SVG canvas from the file format.
from matplotlib.figure import Figure as _MplFigure

Figure = Any


def _subplots(figsize: tuple[float, float]):
    fig = _MplFigure(figsize=figsize)
    return fig, fig.subplots()


def _stars(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


ANNOTATED_CELLS = 30  # systems up to which the win-rate grid prints each cell's number


def winrate_heatmap(
    rows: list[dict],
    a: str = "a",
    b: str = "b",
    rate: str = "win_rate_a",
    title: str = "Win rate of row over column",
    order: list[str] | None = None,
) -> Figure | None:
    """Grid of win rates with significance stars; rows are (a, b, rate, p) records; `order`: the
    systems best first (the report's rank order), others after them."""
    if not rows:
        return None
    present = {r[a] for r in rows} | {r[b] for r in rows}
    names = [n for n in (order or []) if n in present] + sorted(present - set(order or []))
    index = {n: i for i, n in enumerate(names)}
    grid = np.full((len(names), len(names)), np.nan)
    marks = [["" for _ in names] for _ in names]
    for r in rows:
        value = r.get(rate)
        if value is None:
            continue
        i, j = index[r[a]], index[r[b]]
        grid[i, j], grid[j, i] = value, 1 - value
        marks[i][j] = marks[j][i] = _stars(r.get("p"))
    # Beyond ANNOTATED_CELLS systems a grid of printed numbers is unreadable and costly (100 models:
    # 10,000 texts on a 77-inch figure, minutes and gigabytes to draw): colours only, on a page-sized
    # figure; report.json and the HTML table hold the numbers.
    annotated = len(names) <= ANNOTATED_CELLS
    size = max(3.5, 0.75 * len(names) + 2) if annotated else min(18.0, 0.15 * len(names) + 4)
    fig, ax = _subplots((size, size * 0.85))
    im = ax.imshow(grid, cmap="RdBu", vmin=0, vmax=1)
    ticks: dict[str, Any] = {"rotation": 45, "ha": "right"}
    if not annotated:
        ticks = {"rotation": 90, "ha": "center", "fontsize": max(3, min(8, 600 // len(names)))}
    ax.set_xticks(range(len(names)), names, **ticks)
    ticks.pop("rotation"), ticks.pop("ha")
    ax.set_yticks(range(len(names)), names, **ticks)
    for i in range(len(names) if annotated else 0):
        for j in range(len(names)):
            if not np.isnan(grid[i, j]):
                ax.text(
                    j,
                    i,
                    f"{grid[i, j]:.0%}{marks[i][j]}",
                    ha="center",
                    va="center",
                    fontsize=8 if len(names) <= 8 else 6,
                    color="white" if abs(grid[i, j] - 0.5) > 0.3 else "black",
                )
    fig.colorbar(im, ax=ax, fraction=0.046)
    legend = "\n(* p<.05, ** p<.01, *** p<.001)" if any(r.get("p") is not None for r in rows) else ""
    ax.set_title(title + legend, fontsize=10)
    fig.tight_layout()
    return fig


def leaderboard(
    rows: list[dict],
    value: str = "rating",
    low: str = "ci_low",
    high: str = "ci_high",
    title: str = "Bradley–Terry ratings with 95% bootstrap intervals",
) -> Figure | None:
    rows = [r for r in rows or [] if r.get(value) is not None]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: r[value])
    y = np.arange(len(rows))
    v = np.array([r[value] for r in rows], dtype=float)
    lo = np.array([r.get(low, r[value]) for r in rows], dtype=float)
    hi = np.array([r.get(high, r[value]) for r in rows], dtype=float)
    fig, ax = _subplots((6, 0.45 * len(rows) + 1.2))
    # Bounds can sit a rounding error inside the point (a bot that won everything): never negative.
    ax.errorbar(v, y, xerr=[np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)], fmt="o", capsize=4)
    ax.set_yticks(y, [r.get("name", "?") for r in rows])
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def _legend_outside(ax, count: int) -> None:
    """A legend beside the axes, never over the data; more columns when there are many entries."""
    if count == 0:
        return
    ncol = 1 if count <= 14 else 2 if count <= 30 else 3
    ax.legend(
        fontsize=7 if count > 8 else 8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        ncol=ncol,
        frameon=False,
        borderaxespad=0,
    )


_STYLES = ("-", "--", ":", "-.")


def lines(
    series: dict[str, list[tuple[float, float]]],
    title: str,
    xlabel: str,
    ylabel: str,
    step: bool = False,
    ylim: tuple[float, float] | None = None,
    hline: float | None = None,
    logx: bool = False,
    stop_at: float | None = None,
) -> Figure | None:
    """One line per series. `stop_at`: cut each series after its first y >= stop_at (curves to a plateau)."""
    series = {k: [p for p in v if p[0] is not None and p[1] is not None] for k, v in (series or {}).items()}
    if logx:
        series = {k: [p for p in v if p[0] > 0] for k, v in series.items()}
    if stop_at is not None:
        for k, v in series.items():
            cut = next((i for i, p in enumerate(v) if p[1] >= stop_at), None)
            series[k] = v[: cut + 1] if cut is not None else v
    series = {k: v for k, v in series.items() if v}
    if not series:
        return None
    fig, ax = _subplots((6, 3.6) if len(series) <= 14 else (6, 4.5))
    for index, (name, points) in enumerate(series.items()):
        xs, ys = zip(*points)
        style = _STYLES[(index // 10) % len(_STYLES)]  # the colour cycle repeats after 10: change the dash
        if step:
            ax.step(xs, ys, where="post", label=name, ls=style)
        else:
            ax.plot(xs, ys, marker="o" if len(xs) <= 25 and len(series) <= 10 else None, label=name, ls=style)
    if logx:
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.set_xscale("log")
        # Plain numbers at 1, 2, 5 x 10^k; no labels on the other minor ticks (they overlap).
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    if hline is not None:
        ax.axhline(hline, color="grey", lw=0.8, ls="--")
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    _legend_outside(ax, len(series))
    ax.grid(alpha=0.3)
    return fig


def grouped_bars(values: dict[str, dict[str, float]], title: str, ylabel: str) -> Figure | None:
    """values[system][group] -> bar height; one group of bars per system."""
    values = {s: {g: v for g, v in d.items() if v is not None} for s, d in (values or {}).items()}
    values = {s: d for s, d in values.items() if d}
    if not values:
        return None
    groups = list(dict.fromkeys(g for d in values.values() for g in d))
    systems = list(values)
    width = 0.8 / len(groups)
    fig, ax = _subplots((min(12, max(6, 0.18 * len(systems) * len(groups) + 2)), 4.2))
    for k, g in enumerate(groups):
        ax.bar(
            np.arange(len(systems)) + k * width - 0.4 + width / 2,
            [values[s].get(g, np.nan) for s in systems],
            width,
            label=g,
        )
    ax.set_xticks(
        range(len(systems)),
        systems,
        rotation=30 if len(systems) <= 6 else 60,
        ha="right",
        fontsize=9 if len(systems) <= 10 else 7,
    )
    ax.axhline(0, color="black", lw=0.6)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    _legend_outside(ax, len(groups))
    return fig


def rank_ranges(systems: list[dict], title: str = "Bootstrap rank ranges (1 = best)") -> Figure | None:
    """Each system's range of ranks as a bar from its best to its worst rank, best system on top."""
    rows = [s for s in systems or [] if s.get("rank_range") and len(s["rank_range"]) == 2]
    if not rows:
        return None
    rows = sorted(rows, key=lambda s: (sum(s["rank_range"]) / 2, s["name"]))
    fig, ax = _subplots((6, 0.45 * len(rows) + 1.2))
    for y, s in enumerate(rows):
        lo, hi = s["rank_range"]
        ax.plot([lo, hi], [y, y], lw=6, solid_capstyle="round", color="#3b6ea8", alpha=0.8)
        ax.plot([(lo + hi) / 2], [y], "o", color="black", ms=4)
    ax.set_yticks(range(len(rows)), [s["name"] for s in rows])
    ax.invert_yaxis()
    top = max(s["rank_range"][1] for s in rows)
    ax.set_xticks(range(1, top + 1))
    ax.set_xlim(0.5, top + 0.5)
    ax.set_xlabel("rank")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return fig
