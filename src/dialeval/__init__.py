"""dialeval: human evaluation of chatbots, from study file to report."""

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # METHODS: the ids of the methods with annotation pages, read from the method registry
    # (dialeval.methods) on first use, so importing dialeval stays cheap.
    if name == "METHODS":
        from .registry import ids

        return ids(collectable=True)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
