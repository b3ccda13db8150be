"""`serve`: prepare the studies' units, print the links, run uvicorn (several stateless workers)."""

from __future__ import annotations

import os
import socket
import threading
import webbrowser
from pathlib import Path

from .app import STUDY_FOLDERS_ENV


def study_links(app, host: str, port: int) -> list[dict[str, str]]:
    """Annotator, Prolific, MTurk, volunteer and admin links of every served study."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    base = f"http://{shown}:{port}"
    out = []
    for served in app.state.studies.values():
        url = f"{base}/s/{served.slug}/"
        out.append({
            "study": served.ctx.config.name, "method": served.ctx.method, "annotator": url,
            "volunteer": url + "?volunteer=1",
            "prolific": url + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
            "mturk": url + "  (ExternalQuestion: MTurk adds workerId, assignmentId, hitId, turkSubmitTo)",
            "admin": f"{base}/s/{served.slug}/admin?token={served.admin_token}",
            "error": served.error or "",
        })
    return out


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def serve(study_folders: list[Path], host: str = "127.0.0.1", port: int = 8000, workers: int = 1,
          open_browser: bool = False, print_fn=print) -> None:
    """Serve the study folders. With workers > 1 uvicorn starts N processes from an app factory."""
    import uvicorn

    from .app import create_app

    folders = [Path(f).resolve() for f in study_folders]
    app = create_app(folders, prepare=True)  # builds units once, creates .secret/.admin-token
    print_fn(f"dialeval: serving {len(folders)} stud{'y' if len(folders) == 1 else 'ies'} on http://{host}:{port}/")
    for link in study_links(app, host, port):
        print_fn(f"\n  {link['method']}: {link['study']}")
        if link["error"]:
            print_fn(f"    not available: {link['error']}")
            continue
        for key in ("annotator", "volunteer", "prolific", "mturk", "admin"):
            print_fn(f"    {key:<10} {link[key]}")
    if open_browser:
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        threading.Timer(1.0, webbrowser.open, args=(f"http://{shown}:{port}/",)).start()
    if workers > 1:
        for served in app.state.studies.values():
            served.ctx.store.close()
        os.environ[STUDY_FOLDERS_ENV] = os.pathsep.join(map(str, folders))
        uvicorn.run("dialeval.web.app:app_from_env", factory=True, host=host, port=port, workers=workers,
                    log_level="warning", proxy_headers=True)
    else:
        uvicorn.run(app, host=host, port=port, log_level="warning", proxy_headers=True)
