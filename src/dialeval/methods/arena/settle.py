"""Method.settle of the arena, importable without the live protocol: a study without two live bots
(imported battles) holds no vote to settle, and `dialeval report` of a million imported battles need
not import the pages' code (protocol.py and what it imports: 0.3-0.4 s) to learn it."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


def settle_held_votes(opened: Any, *, gone: Collection[int] = ()) -> int:
    """protocol.settle_held_votes, once the study has two live bots (else 0, as it returns)."""
    if sum(1 for b in opened.config.bots if b.type != "imported") < 2:
        return 0
    from .protocol import settle_held_votes as settle

    return settle(opened, gone=gone)
