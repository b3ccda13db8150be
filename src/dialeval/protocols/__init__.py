"""The protocol framework: a method's annotation pages are a `Protocol` subclass (protocols/base.py),
found through the method registry and imported on first use.

    from dialeval.protocols import get_protocol
    cls = get_protocol("acute")          # -> AcuteProtocol (dialeval.methods.acute.protocol)

A new method names its class in its `Method` (``protocol="package.module:Class"``, docs/methods.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import DialevalError

if TYPE_CHECKING:
    from .base import Protocol


def get_protocol(method: str) -> type[Protocol[Any]]:
    """The Protocol class of a method id (imports the method's protocol module lazily)."""
    from .. import registry

    spec = registry.get(method)
    if spec.protocol is None:
        raise DialevalError(f"the annotation pages of method '{method}' are not available yet")
    from .base import Protocol as Base

    cls = registry.load_part(spec.protocol)
    if not (isinstance(cls, type) and issubclass(cls, Base)):
        raise DialevalError(f"method '{method}': {spec.protocol} is not a dialeval Protocol subclass")
    return cls


def available_methods() -> list[str]:
    """Method ids whose annotation pages can be imported."""
    from .. import registry

    found = []
    for method in registry.ids(collectable=True):
        try:
            get_protocol(method)
        except (DialevalError, ImportError):
            continue
        found.append(method)
    return found
