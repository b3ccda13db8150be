"""Quality control of annotators: worker message filters (and, from other modules, onboarding and QC tests)."""

from dialeval.quality.filters import (
    MESSAGE_CHECKS,
    NEVER_GIVES_REASON,
    apply_flags,
    check_messages,
    filter_annotators,
    load_wordlist,
    never_gives_reason,
)

__all__ = [
    "MESSAGE_CHECKS",
    "NEVER_GIVES_REASON",
    "apply_flags",
    "check_messages",
    "filter_annotators",
    "load_wordlist",
    "never_gives_reason",
]
