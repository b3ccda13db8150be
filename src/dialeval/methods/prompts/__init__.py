"""Prompt-set comparison: every system answers the same prompts; people compare two answers to one
prompt side by side (A / B / tie / both bad), several people per item, as in the human studies of
MT-Bench (Zheng et al. 2023) and AlpacaEval (Dubois et al. 2023)."""

from __future__ import annotations

from ...registry import Method, PlanningModel, SimulationModel

_P = __name__

# Seconds per comparison: no published figure for the MT-Bench or AlpacaEval human studies.
# Assumption: reading two answers of a few paragraphs and voting, about a minute.
SECONDS_PER_COMPARISON = 60.0

METHOD = Method(
    id="prompts",
    title="Prompt-set comparison",
    order=70,
    paper="Zheng et al. 2023; Dubois et al. 2023",
    options=f"{_P}.options:PromptsOptions",
    analysis=f"{_P}.analysis:analyze_prompts",
    protocol=f"{_P}.protocol:PromptsProtocol",
    methods_text=(
        "Every system answered the same prompts. Annotators saw one prompt and two systems' answers side "
        "by side, sides drawn at random per judgment, and chose A, B, tie or both bad, with an optional "
        "reason; several annotators judged each item, nobody twice. We report each system's win rate "
        "against the baseline (ties and both bad count half) with 95% intervals clustered by prompt, a "
        "Bradley-Terry leaderboard with bootstrap intervals, and both per prompt category."
    ),
    study_template=f"{_P}:study.yaml",
    demo={
        "bots": [
            {"name": "retrieval", "type": "retrieval"},
            {"name": "eliza", "type": "eliza"},
            {"name": "repeat", "type": "repeat"},
        ],
        "annotation": {"require_justification": False},
        "protocol": {
            "prompts": "bundled",
            "baseline": "repeat",
            "annotations_per_item": 2,
            "items_per_session": 6,
            "attention_every": 3,
        },
    },
    simulation=SimulationModel(
        step=f"{_P}.simulation:step",
        judgment_actions=("submit",),
        seconds={"prompts": SECONDS_PER_COMPARISON},
    ),
    planning=PlanningModel(
        seconds_per_judgment=SECONDS_PER_COMPARISON,
        test="binomial",
        source="assumption: about a minute to read two answers and vote; no published time per comparison",
        draws=True,
        pilot="dialeval.report.pilot:pairwise_pilot",
    ),
    paired=True,
    onboarding_check=True,
    templates=_P,
    instructions="instructions_prompts.html",
    limits=(
        "Limits: the answer holds for this prompt set and its categories, not for prompts in general; "
        "ties and 'both bad' count half a win; the judgments of one item come from few people, and the "
        "win rates' intervals allow for that by clustering on the prompt."
    ),
    answer_pairs=f"{_P}.analysis:answer_pairs",
    excluded_bot_types=frozenset({"degraded"}),
    session_option="items_per_session",
    judge=f"{_P}.judge:prompts",
    judge_guided=True,
    generate=f"{_P}.answers:generate_answers",
    planned=f"{_P}.answers:planned_answers",
    exports={"preferences": f"{_P}.export:export_preferences"},
    study_imports={"answers": f"{_P}.answers:import_answers"},
    examples=f"{_P}.examples:prompt_examples",
)
