"""The consoles every command prints to (stdout for results, stderr for errors)."""

from __future__ import annotations

import os
import sys

from rich.console import Console


def make_console(stderr: bool = False) -> Console:
    """Off a terminal (a log, a pipe) rich would cut tables at 80 columns: use $COLUMNS or 200."""
    stream = sys.stderr if stderr else sys.stdout
    width = None
    if not (hasattr(stream, "isatty") and stream.isatty()):
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else 200
    return Console(stderr=stderr, width=width)


console = make_console()
err_console = make_console(stderr=True)
