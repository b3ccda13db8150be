"""Plots of a report dict, as matplotlib figures (saved as PNG/SVG files and inlined in the HTML).

Every function takes parts of the JSON report, not DataFrames, so a report can be redrawn from
report.json alone. A function returns None when the report has nothing to draw.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display on servers and in CI
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

Figure = Any


def _stars(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def winrate_heatmap(rows: list[dict], a: str = "a", b: str = "b", rate: str = "win_rate_a",
                    title: str = "Win rate of row over column") -> Figure | None:
    """Grid of win rates with significance stars; rows are (a, b, rate, p) records."""
    if not rows:
        return None
    names = sorted({r[a] for r in rows} | {r[b] for r in rows})
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
    size = max(3.5, 0.75 * len(names) + 2)
    fig, ax = plt.subplots(figsize=(size, size * 0.85))
    im = ax.imshow(grid, cmap="RdBu", vmin=0, vmax=1)
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for j in range(len(names)):
            if not np.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.0%}{marks[i][j]}", ha="center", va="center", fontsize=8,
                        color="white" if abs(grid[i, j] - 0.5) > 0.3 else "black")
    fig.colorbar(im, ax=ax, fraction=0.046)
    legend = "\n(* p<.05, ** p<.01, *** p<.001)" if any(r.get("p") is not None for r in rows) else ""
    ax.set_title(title + legend, fontsize=10)
    fig.tight_layout()
    return fig


def leaderboard(rows: list[dict], value: str = "rating", low: str = "ci_low", high: str = "ci_high",
                title: str = "Bradley–Terry ratings with 95% bootstrap intervals") -> Figure | None:
    rows = [r for r in rows or [] if r.get(value) is not None]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: r[value])
    y = np.arange(len(rows))
    v = np.array([r[value] for r in rows], dtype=float)
    lo = np.array([r.get(low, r[value]) for r in rows], dtype=float)
    hi = np.array([r.get(high, r[value]) for r in rows], dtype=float)
    fig, ax = plt.subplots(figsize=(6, 0.45 * len(rows) + 1.2))
    # Bounds can sit a rounding error inside the point (a bot that won everything): never negative.
    ax.errorbar(v, y, xerr=[np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)], fmt="o", capsize=4)
    ax.set_yticks(y, [r.get("name", "?") for r in rows])
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def lines(series: dict[str, list[tuple[float, float]]], title: str, xlabel: str, ylabel: str,
          step: bool = False, ylim: tuple[float, float] | None = None, hline: float | None = None,
          logx: bool = False, stop_at: float | None = None) -> Figure | None:
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
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for name, points in series.items():
        xs, ys = zip(*points)
        if step:
            ax.step(xs, ys, where="post", label=name)
        else:
            ax.plot(xs, ys, marker="o" if len(xs) <= 25 else None, label=name)
    if logx:
        ax.set_xscale("log")
    if hline is not None:
        ax.axhline(hline, color="grey", lw=0.8, ls="--")
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
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
    fig, ax = plt.subplots(figsize=(min(11, max(6, 0.3 * len(systems) * len(groups))), 4.2))
    for k, g in enumerate(groups):
        ax.bar(np.arange(len(systems)) + k * width - 0.4 + width / 2,
               [values[s].get(g, np.nan) for s in systems], width, label=g)
    ax.set_xticks(range(len(systems)), systems, rotation=30, ha="right")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=min(len(groups), 4))
    fig.tight_layout()
    return fig
