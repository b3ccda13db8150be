"""The report's figures drawn in a second process while the first one computes the statistics.

Why: `dialeval report` of a small study spends about 0.5 s in matplotlib (its import ~0.25 s, drawing and
rendering the SVGs ~0.25 s) beside ~1.2 s of reading the store and computing the statistics, one after
the other on one core, while most machines have two or more. A process forked at the start of the
command imports matplotlib and the plots while the first one imports pandas, scipy and SQLAlchemy and
computes; it then gets the finished report dict, draws its figures (`build.figures`), renders them with
a fork of itself (`build.rendered_figure`: the code an in-process report runs) and sends the bytes back
while the first writes report.json and prepares the page. The figures are drawn from the report dict
alone, so the bytes are the same (tests/report/test_figure_worker.py).

Only by fork (the worker inherits the loaded modules and needs no second start of the interpreter), and
only where it is safe and usual: not on macOS (fork is not safe with its system libraries), not from a
process that runs other threads (a lock held by one of them stays held in the child). Anywhere else,
and whenever the worker fails (it died, or drawing failed there), `write_report` draws in-process as
it always did: the same files either way, and the same error if drawing itself fails.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

Rendered = dict[str, tuple[bytes, bytes | None]]  # figure name -> (SVG bytes, PNG bytes or None)


class FigureWorker:
    """The parent's end: `send` the report, do other work, then `receive` the rendered figures."""

    def __init__(self, process: Any, conn: Any) -> None:
        self._process = process
        self._conn = conn
        self._sent = False
        self._done = False

    def send(self, report: dict[str, Any], png: bool) -> bool:
        """Give the worker the report to draw (once); False: it cannot take it (draw in-process)."""
        if self._sent or self._done:
            return False
        self._sent = True
        try:
            self._conn.send((report, png))
        except (OSError, ValueError, EOFError):  # the worker is gone (a broken pipe)
            self._done = True
            return False
        return True

    def receive(self) -> Rendered | None:
        """The sent report's figures, rendered; None when the worker could not draw them."""
        if not self._sent or self._done:
            return None
        self._done = True
        try:
            result = self._conn.recv()  # EOFError when the worker died: the parent holds no copy of its end
        except (OSError, EOFError):
            return None
        return result if isinstance(result, dict) else None

    def close(self) -> None:
        """Stop the worker and wait for it: nothing is left behind (an error, Ctrl-C, or done)."""
        self._conn.close()
        if not self._done:  # still importing or drawing something nobody will read
            self._process.terminate()
        self._process.join(5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._process.close()


def start() -> FigureWorker | None:
    """Fork the worker; None where that is not done (see the module's doc) or fails."""
    import multiprocessing
    import threading

    if sys.platform == "darwin" or "fork" not in multiprocessing.get_all_start_methods():
        return None
    if threading.active_count() > 1:
        return None
    try:
        context = multiprocessing.get_context("fork")
        mine, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs, mine), name="dialeval-figures", daemon=True)
        process.start()
    except OSError:  # no process or pipe to spare
        return None
    theirs.close()  # the worker's end lives in the worker only: its death is an end of file here
    return FigureWorker(process, mine)


@contextmanager
def figure_worker() -> Iterator[FigureWorker | None]:
    """A worker for the block (None: draw in-process), stopped when the block ends however it ends."""
    worker = start()
    try:
        yield worker
    finally:
        if worker is not None:
            worker.close()


def _serve(conn: Any, parent_end: Any) -> None:
    """The worker: import matplotlib now, then draw the one report it is sent (nothing on a closed pipe)."""
    import signal

    parent_end.close()
    # Ctrl-C reaches the whole process group: it is the parent's to handle (it stops this worker),
    # not a second traceback from here.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        from matplotlib.backends import backend_svg  # noqa: F401  (savefig's SVG canvas, else imported at the first render)

        from . import plots  # noqa: F401  (matplotlib.figure: the import this process is here to take)
    except Exception:  # the drawing fails below too, and the parent draws (and reports the error) itself
        pass
    try:
        request = conn.recv()
    except (EOFError, OSError):  # the parent is done without figures (an error, Ctrl-C)
        return
    result: Rendered | None
    try:
        report, png = request
        result = _rendered_here_and_in_a_fork(report, png)
    except Exception:
        result = None
    try:
        conn.send(result)
    except Exception:  # the parent is gone, or it draws in-process
        pass


def _rendered_here_and_in_a_fork(report: dict[str, Any], png: bool) -> Rendered:
    """`build.rendered_figures`, its renders shared with a fork of this process: the parent waits for
    them, so both cores are free (a small arena report: 0.17 s of SVG renders of 3 figures, the
    largest part of the wait). The same figure objects and the same render code: the same bytes."""
    import os
    import pickle
    import signal
    import warnings

    from .build import figures, rendered_figure

    with warnings.catch_warnings():  # as rendered_figures does
        warnings.simplefilter("ignore", UserWarning)
        figs = figures(report)
        names = list(figs)
        theirs = names[1::2]  # every second figure, in the order they come
        pid = -1
        if theirs:
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # the fork: render its share, write it down the pipe, leave
                status = 1
                try:
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    os.close(read_fd)
                    with os.fdopen(write_fd, "wb") as pipe:
                        pickle.dump({name: rendered_figure(figs[name], png) for name in theirs}, pipe)
                    status = 0
                finally:
                    os._exit(status)  # never back into this process's code (nor its exit handlers)
            os.close(write_fd)
            # stopped by the parent (Ctrl-C, an error there): the fork goes too, nothing left behind
            signal.signal(signal.SIGTERM, lambda *_: _stop(pid))
        mine = {name: rendered_figure(figs[name], png) for name in names if name not in theirs}
        got: Rendered = {}
        if pid > 0:
            with os.fdopen(read_fd, "rb") as pipe:
                data = pipe.read()
            os.waitpid(pid, 0)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                got = pickle.loads(data)
            except Exception:  # the fork failed: its share is rendered here
                got = {}
        return {
            name: mine[name] if name in mine else got.get(name) or rendered_figure(figs[name], png) for name in names
        }


def _stop(pid: int) -> None:
    import os
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    finally:
        os._exit(1)
