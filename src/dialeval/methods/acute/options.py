"""The study file's `protocol:` block of this method, validated (defaults filled in)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ...plugin import StrictModel


class AcuteOptions(StrictModel):
    comparisons_per_unit: int = Field(5, ge=1, le=50)  # comparisons in one annotator's session
    annotations_per_pair: int = Field(50, ge=1, le=100_000, description="target judgments per bot pair and question")
    pairs: list[tuple[str, str]] | None = None  # default: every pair of bots
    onboarding_weak_bot: str | None = None  # the weak bot of the onboarding comparison

    @property
    def onboarding_runs(self) -> bool:
        """The pages run the onboarding check only with a weak bot to compare (report's methods text)."""
        return self.onboarding_weak_bot is not None

    def check_study(self, config: Any) -> None:
        """The onboarding check pairs a human conversation with one of the weak bot's: without that
        bot among `bots:` workers would get no practice while the report says they passed one."""
        if not config.onboarding.enabled:
            return
        names = [b.name for b in config.bots]
        weak = self.onboarding_weak_bot
        if weak is not None and weak not in names:
            raise ValueError(
                f"protocol.onboarding_weak_bot names '{weak}', which is not in bots ({', '.join(names)}); "
                f"the onboarding check shows this weak bot's conversations: add it under bots: "
                f"(e.g. - {{name: {weak}, type: repeat}}), name another of the bots, or set onboarding.enabled: false"
            )
        if weak is None and "enabled" in config.onboarding.model_fields_set:
            raise ValueError(
                "onboarding.enabled is true but protocol.onboarding_weak_bot names no bot, so there would be no "
                "onboarding check; name a weak bot of bots: (e.g. onboarding_weak_bot: repeat with "
                "- {name: repeat, type: repeat}) or set onboarding.enabled: false"
            )
