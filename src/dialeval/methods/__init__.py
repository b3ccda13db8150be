"""The method registry: every evaluation method dialeval knows, read from one place.

Methods are found through the entry-point group ``dialeval.methods`` (pyproject.toml), so
dialeval's own methods and an outside package's are registered the same way. Each entry point's
value is a `Method` (methods/spec.py); the package ``dialeval.methods.<id>`` holds all of it.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points

from ..errors import DialevalError
from .spec import Method, PlanningModel, SimulationModel, load_part

ENTRY_POINT_GROUP = "dialeval.methods"

__all__ = ["ENTRY_POINT_GROUP", "Method", "PlanningModel", "SimulationModel", "all_methods", "get", "ids", "load_part"]


@cache
def all_methods() -> dict[str, Method]:
    """Every registered method by id, ordered by `Method.order` (dialeval's own first, in the order
    of the papers), then by id."""
    found: dict[str, Method] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        method = entry.load()
        if not isinstance(method, Method):
            raise DialevalError(f"entry point '{entry.name}' of group {ENTRY_POINT_GROUP} is not a dialeval Method")
        if method.id != entry.name:
            raise DialevalError(f"entry point '{entry.name}' names method '{method.id}'; the two must match")
        found.setdefault(method.id, method)
    if not found:
        raise DialevalError(
            f"no evaluation method is registered (entry-point group {ENTRY_POINT_GROUP}); "
            "reinstall dialeval (pip install -e .) so its package metadata is current"
        )
    return dict(sorted(found.items(), key=lambda item: (item[1].order, item[0])))


def get(method_id: str) -> Method:
    """The method with this id; an unknown id raises DialevalError naming the known ones."""
    known = all_methods()
    if method_id not in known:
        raise DialevalError(f"unknown method '{method_id}'; known: {', '.join(known)}")
    return known[method_id]


def ids(*, collectable: bool | None = None) -> tuple[str, ...]:
    """Method ids; `collectable=True` only those with annotation pages, False only import-only."""
    return tuple(m.id for m in all_methods().values() if collectable is None or m.collectable == collectable)
