"""The protocol framework: a method's annotation pages are a `Protocol` subclass (protocols/base.py),
found through the method registry and imported on first use.

    from dialeval.protocols import get_protocol
    cls = get_protocol("acute")          # -> AcuteProtocol (dialeval.methods.acute.protocol)

A new method names its class in its `Method` (``protocol="package.module:Class"``, docs/methods.md).
"""

from __future__ import annotations

from ..errors import DialevalError


def get_protocol(method: str):
    """The Protocol class of a method id (imports the method's protocol module lazily)."""
    from .. import methods

    spec = methods.get(method)
    if spec.protocol is None:
        raise DialevalError(f"the annotation pages of method '{method}' are not available yet")
    return methods.load_part(spec.protocol)


def available_methods() -> list[str]:
    """Method ids whose annotation pages can be imported."""
    from .. import methods

    found = []
    for method in methods.ids(collectable=True):
        try:
            get_protocol(method)
        except (DialevalError, ImportError):
            continue
        found.append(method)
    return found
