"""The study file's `protocol:` block of a prompt-set study (plain pydantic: reading the registry
never imports the study-file module)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

BUNDLED = "bundled"  # `prompts: bundled`: the prompt set shipped with dialeval (methods/prompts/prompts.jsonl)


class Criterion(BaseModel):
    """An extra question asked on the same page (A / B / tie / both bad), e.g. harmlessness."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9][a-z0-9_-]*$")  # names it in report.json
    text: str = Field(min_length=1, max_length=300)  # the question as the annotator reads it


class PromptsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error

    # the prompt set: a JSONL or CSV file (relative to the study folder), or `bundled`
    prompts: str = BUNDLED
    # every system against this one (AlpacaEval's design); None: every pair of systems
    baseline: str | None = None
    # explicit pairs instead (default: every pair, or every system vs the baseline)
    pairs: list[tuple[str, str]] | None = None
    annotations_per_item: int = Field(3, ge=1, le=50, description="people per prompt and pair (never one twice)")
    items_per_session: int = Field(10, ge=1, le=200, description="comparisons in one annotator's session")
    show_reference: bool = False  # show the prompt's reference answer (when it has one) to annotators
    # the main question above the vote buttons
    question: str = Field("Which answer to the prompt is better?", min_length=1, max_length=300)
    criteria: list[Criterion] = Field(default_factory=list)
    # an attention check (a known answer: the on-topic answer against one given to another prompt)
    # every N comparisons; 0 = none. A failed check flags the annotator.
    attention_every: int = Field(0, ge=0, le=100)

    @field_validator("criteria")
    @classmethod
    def _unique(cls, value: list[Criterion]) -> list[Criterion]:
        ids = [c.id for c in value]
        if len(set(ids)) != len(ids) or "overall" in ids:
            raise ValueError("criteria ids must be unique and not 'overall'")
        return value
