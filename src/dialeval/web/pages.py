"""Rendering: the Jinja environment and how a page or an answer is made for a request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse

from .. import methods

HERE = Path(__file__).parent


def make_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=template_loader(),
        autoescape=True,  # every piece of bot and annotator text is escaped
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["tojson_attr"] = lambda v: json.dumps(v)
    env.globals["instructions_template"] = lambda method: methods.get(method).instructions
    return env


def template_loader() -> jinja2.BaseLoader:
    """The shared pages (web/templates) first, then each method's own pages (methods/<id>/templates)."""
    from importlib import resources

    folders = [str(HERE / "templates")]
    for method in methods.all_methods().values():
        if method.templates:
            folders.append(str(resources.files(method.templates) / "templates"))
    return jinja2.FileSystemLoader(folders)


def wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "") or request.headers.get(
        "content-type", ""
    ).startswith("application/json")


def error_as_html(request: Request) -> bool:
    """Errors are pages for a browser's navigation (Accept: text/html), JSON for fetch() and APIs."""
    return "text/html" in request.headers.get("accept", "") and not wants_json(request)


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The template rendered with the app's environment; `session_token` carries a cookie-less session."""
    context.setdefault("request", request)
    context.setdefault("csrf", "")
    context.setdefault("session_token", getattr(request.state, "session_token", None))
    html = request.app.state.env.get_template(template).render(**context)
    return HTMLResponse(html, status_code=status)
