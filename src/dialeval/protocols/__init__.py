"""Evaluation methods: one module per method, found by method id and imported on first use.

    from dialeval.protocols import get_protocol
    cls = get_protocol("acute")          # -> AcuteProtocol (protocols/acute.py, attribute PROTOCOL)

A new method = a new module here defining ``PROTOCOL = <Protocol subclass>`` plus one entry in
MODULES; the framework contract is documented in protocols/base.py.
"""

from __future__ import annotations

import importlib

from ..errors import DialevalError

# method id -> module name under dialeval.protocols
MODULES: dict[str, str] = {
    "acute": "acute",
    "spot-the-bot": "spot_the_bot",
    "pairwise-turn": "pairwise_turn",
    "single-model": "single_model",
    "direct-assessment": "direct_assessment",
}


def get_protocol(method: str):
    """The Protocol class of a method id (imports protocols.<module> lazily)."""
    module_name = MODULES.get(method)
    if module_name is None:
        raise DialevalError(f"unknown method '{method}'; known: {', '.join(MODULES)}")
    try:
        module = importlib.import_module(f"{__name__}.{module_name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{__name__}.{module_name}":
            raise DialevalError(f"the annotation pages of method '{method}' are not available yet") from None
        raise
    cls = getattr(module, "PROTOCOL", None)
    if cls is None:
        raise DialevalError(f"protocols.{module_name} defines no PROTOCOL class")
    return cls


def available_methods() -> list[str]:
    """Method ids whose module can be imported."""
    found = []
    for method in MODULES:
        try:
            get_protocol(method)
        except DialevalError:
            continue
        found.append(method)
    return found
