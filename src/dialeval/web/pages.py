"""Rendering: the Jinja environment and how a page or an answer is made for a request."""

from __future__ import annotations

import json
from collections.abc import Hashable
from functools import lru_cache
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from markupsafe import Markup

from .. import registry
from ..bot_markdown import render as render_bot_text

HERE = Path(__file__).parent


def make_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=template_loader(),
        autoescape=True,  # every piece of bot and annotator text is escaped
        trim_blocks=True,
        lstrip_blocks=True,
        # The templates are package files that do not change while a server runs: no stat() of the
        # file at every page (Jinja's default checks each template's mtime on each look-up).
        auto_reload=False,
    )
    env.filters["tojson_attr"] = lambda v: json.dumps(v)
    env.filters["bot_markdown"] = bot_markdown
    render_bot_text("")  # parser and sanitiser built now, not on a live reply's first words
    env.globals["instructions_template"] = lambda method: registry.get(method).instructions
    env.globals["method_static"] = method_static_url
    env.globals["fragment"] = fragment
    return env


def method_static_folder(method: registry.Method) -> Path | None:
    """The method's own CSS and JavaScript: the `static/` folder beside its `templates/` (None: none)."""
    from importlib import resources

    if not method.templates:
        return None
    folder = Path(str(resources.files(method.templates) / "static"))
    return folder if folder.is_dir() else None


def method_static_url(method_id: str, name: str) -> str:
    """Where a method's page loads one of its own files: `{{ method_static(study.method, "x.css") }}`."""
    return f"/m/{method_id}/static/{name}"


@jinja2.pass_context
def bot_markdown(context: Any, text: str, markdown: bool | None = None) -> Markup:
    """`{{ text | bot_markdown }}`: a bot's text as the page shows it (bot_markdown.py), rendered
    Markdown unless the study file says `pages: {markdown: false}` (or `markdown=` is given).
    Never for annotators' own text. It reads the page's `study`: a macro using it must be imported
    `with context`, else this stops with an error (a silent default could ignore the study's choice)."""
    if markdown is None:
        if "study" not in context:
            raise RuntimeError("bot_markdown needs the page's `study` (import the macro `with context`)")
        config = getattr(context["study"], "config", None)
        markdown = config.pages.markdown if config is not None else True
    return Markup(rendered_bot_text(text, bool(markdown)))


# A task page shows the same stored conversations again and again (units point at them): each text
# is parsed and sanitised once per process, not on every page view. Bounded, for live chats' texts.
rendered_bot_text = lru_cache(maxsize=8192)(render_bot_text)


FRAGMENT_CACHE_SIZE = 4096  # per served study: e.g. ACUTE-Eval's sides (conversation x speaker x side)
_fragments: WeakKeyDictionary[Any, dict[tuple[str, Hashable], Markup]] = WeakKeyDictionary()


@jinja2.pass_context
def fragment(context: Any, template: str, key: Hashable, **values: Any) -> Markup:
    """`{{ fragment("part.html", key, name=value) }}`: the template rendered with the page's `study`
    and the given values, kept per process and study under `key` -- which must determine
    everything the part shows (e.g. a stored conversation's id, the speaker highlighted and its
    side). A task page shows the same stored conversations again and again: their turns are laid
    out once, not at every page view (it was most of the page's rendering). Never for what
    depends on the annotator, the request or a live chat."""
    study = context.get("study")
    cache = _fragments.setdefault(study, {}) if study is not None else None
    html = cache.get((template, key)) if cache is not None else None
    if html is None:
        html = Markup(context.environment.get_template(template).render(study=study, **values))
        if cache is not None:
            if len(cache) >= FRAGMENT_CACHE_SIZE:
                cache.pop(next(iter(cache)))  # the oldest entry
            cache[(template, key)] = html
    return html


def template_loader() -> jinja2.BaseLoader:
    """The shared pages (web/templates) first, then each method's own pages (methods/<id>/templates)."""
    from importlib import resources

    folders = [str(HERE / "templates")]
    for method in registry.all_methods().values():
        if method.templates:
            folders.append(str(resources.files(method.templates) / "templates"))
    return jinja2.FileSystemLoader(folders)


def compile_page_templates(env: jinja2.Environment, method_ids: set[str]) -> None:
    """Compile now, in a serving worker before it takes requests, the shared pages and the pages of
    the methods served: Jinja compiles a template on its first use, and a method's task page with
    its macros took 50-60 ms of one worker's CPU on its first view (single model: 77 ms against 12 ms
    warm). Four fresh workers each paid that for each page while the first annotators of a study
    arrived together, which set the human-pace p99 of the live methods."""
    from importlib import resources

    folders = [HERE / "templates"]
    for method_id in sorted(method_ids):
        method = registry.get(method_id)
        if method.templates:
            folders.append(Path(str(resources.files(method.templates) / "templates")))
    for folder in folders:
        for name in jinja2.FileSystemLoader(str(folder)).list_templates():
            if name.endswith(".html"):
                env.get_template(name)


def wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "") or request.headers.get(
        "content-type", ""
    ).startswith("application/json")


# A form sent by app.js with this header asks for the next page in the reply: an answer on a task page
# whose protocol sets `inline_next_page` (the next task page), the entry, consent and instructions
# pages (the consent page, the instructions, the first task page). The page swaps it in: the
# annotator saves a round trip and the server a request (an ACUTE-Eval session had 12 requests, of
# which 3 were the GETs after these forms' redirects; the next page's reads and rendering move into
# the form's worker thread, which has read the session already).
NEXT_PAGE_HEADER = "x-dialeval-next-page"


def wants_next_page(request: Request) -> bool:
    """The request is app.js's fetch() asking for the next page in its reply (NEXT_PAGE_HEADER)."""
    return request.headers.get(NEXT_PAGE_HEADER) == "inline" and wants_json(request)


def form_reply(
    request: Request, target: str, next_page: str | None = None, *, cookies_from: Response | None = None
) -> Response:
    """A session form's reply: for fetch(), {"ok": true, "redirect": target} with the next page's
    HTML as "page" when it was made (wants_next_page); otherwise a 303 to `target` (a browser
    without JavaScript). `cookies_from`: a response whose Set-Cookie headers the reply carries."""
    response: Response
    if wants_json(request):
        reply: dict[str, Any] = {"ok": True, "redirect": target}
        if next_page is not None:
            reply["page"] = next_page
        response = JSONResponse(reply)
    else:
        response = RedirectResponse(target, status_code=303)
    if cookies_from is not None:
        response.raw_headers.extend(h for h in cookies_from.raw_headers if h[0] == b"set-cookie")
    return response


def error_as_html(request: Request) -> bool:
    """Errors are pages for a browser's navigation (Accept: text/html), JSON for fetch() and APIs."""
    return "text/html" in request.headers.get("accept", "") and not wants_json(request)


def render_html(request: Request, template: str, **context: Any) -> str:
    """The template rendered with the app's environment; `session_token` carries a cookie-less session."""
    context.setdefault("request", request)
    context.setdefault("csrf", "")
    context.setdefault("session_token", getattr(request.state, "session_token", None))
    return request.app.state.env.get_template(template).render(**context)


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The page of render_html as the response."""
    return HTMLResponse(render_html(request, template, **context), status_code=status)
