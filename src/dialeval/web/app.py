"""The FastAPI app: entry, consent, instructions, the method's task page, done page, admin.

``create_app(study_folders)`` serves one or several studies, each under ``/s/<slug>/``. Processes
keep no annotator state: identity rides in a signed cookie, progress lives in the database, so
several workers (``uvicorn --workers N``) can serve one study. The method-specific part is the
study's Protocol (protocols/base.py documents the contract).

The endpoints are module-level functions in ``routes_*.py`` (one module per concern); what they
share (the served study, the signed-in annotator, CSRF and Origin checks, ownership) are the
FastAPI dependencies of ``deps.py``. This module only wires state, middleware and routers.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from .. import registry
from ..errors import DialevalError
from ..gc_pause import cyclic_gc_paused
from . import routes_admin, routes_annotator, routes_entry, routes_live
from .error_pages import install_error_handlers
from .limits import BodyLimits
from .middleware import ACCESS_LOG_ENV, install_middleware
from .pages import HERE, compile_page_templates, make_environment, method_static_folder, method_static_url
from .served import ServedStudy, open_served, run_hook_blocking, slugify

__all__ = ["ACCESS_LOG_ENV", "STUDY_FOLDERS_ENV", "app_from_env", "create_app", "make_environment", "slugify"]

STUDY_FOLDERS_ENV = "DIALEVAL_STUDY_FOLDERS"


def create_app(study_folders: list[Path] | list[str], *, prepare: bool = True, warm: bool = False) -> FastAPI:
    """The app serving these study folders (each holding a study.yaml).

    With `prepare` (default) each protocol's prepare step (building units) runs first; `serve`
    runs it once before starting several workers and passes prepare=False to them. With `warm`
    (serve's workers), the served pages' templates are compiled before the first request.
    """
    if not study_folders:
        raise DialevalError("no study folder to serve")
    slugs: set[str] = set()
    studies: dict[str, ServedStudy] = {}
    for folder in study_folders:
        served = open_served(Path(folder), slugs)
        studies[served.slug] = served
    if prepare:
        for served in studies.values():
            if served.protocol is not None:
                # one process at a time per study: hosts started together build its units once
                with served.ctx.store.preparing(served.ctx.study_id), cyclic_gc_paused():
                    run_hook_blocking(served.protocol.prepare)

    app = FastAPI(title="dialeval", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.studies = studies
    app.state.env = make_environment()
    if warm:
        compile_page_templates(app.state.env, {s.ctx.config.method for s in studies.values()})
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    # each method's own CSS and JavaScript, from its package (a method carries all of itself)
    for method in registry.all_methods().values():
        if (static := method_static_folder(method)) is not None:
            app.mount(method_static_url(method.id, "").rstrip("/"), StaticFiles(directory=str(static)))
    install_middleware(app)
    app.add_middleware(BodyLimits)  # outermost: a body too large or too slow never reaches a route
    install_error_handlers(app)
    for module in (routes_entry, routes_annotator, routes_live, routes_admin):
        app.include_router(module.router)
    return app


def app_from_env() -> FastAPI:
    """App factory for `uvicorn --factory --workers N`: study folders from $DIALEVAL_STUDY_FOLDERS."""
    folders = [Path(p) for p in os.environ.get(STUDY_FOLDERS_ENV, "").split(os.pathsep) if p]
    return create_app(folders, prepare=False, warm=True)
