"""The annotation web app: FastAPI + Jinja2, server-rendered, stateless workers sharing one database.

from dialeval.web import create_app, serve
"""

from __future__ import annotations

__all__ = ["create_app", "serve"]


def __getattr__(name: str):  # lazy, so `import dialeval.web.ratelimit` stays light
    if name == "create_app":
        from .app import create_app

        return create_app
    if name == "serve":
        from .serve import serve

        return serve
    raise AttributeError(name)
