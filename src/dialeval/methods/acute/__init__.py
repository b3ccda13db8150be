"""ACUTE-Eval (PW-Dialog): annotators compare two whole conversations side by side."""

from __future__ import annotations

from ...registry import Method, PlanningModel, SimulationModel
from .questions import ACUTE_QUESTIONS

_P = __name__

METHOD = Method(
    id="acute",
    title="ACUTE-Eval (PW-Dialog)",
    order=10,
    paper="Li et al. 2019; Smith et al. 2022",
    options=f"{_P}.options:AcuteOptions",
    analysis=f"{_P}.analysis:analyze_acute",
    protocol=f"{_P}.protocol:AcuteProtocol",
    figures=f"{_P}.figures:figures",
    methods_text=(
        "Annotators compared two whole conversations side by side and chose the better highlighted "
        "speaker for a question, with a short justification. Sides were randomised per judgment. "
        "Per bot pair we report wins, the win rate and a two-sided binomial test."
    ),
    study_template=f"{_P}:study.yaml",
    demo={
        "bots": [
            {"name": "retrieval", "type": "retrieval"},
            {"name": "eliza", "type": "eliza"},
            {"name": "repeat", "type": "repeat"},
        ],
        "generation": {"mode": "self-chat", "conversations": 8, "turns": 4},
        "questions": [{"id": "preference"}],
        "annotation": {"units_per_annotator": 1},
        "protocol": {"comparisons_per_unit": 3, "annotations_per_pair": 20, "onboarding_weak_bot": "repeat"},
    },
    simulation=SimulationModel(
        step=f"{_P}.simulation:step",
        judgment_actions=("submit",),
        seconds={"acute": 60.0},
        abandon_within=0,
    ),
    # Smith et al. 2022, §4.1: PW-Dialog, 6.03 worker-hours for 324 ratings
    planning=PlanningModel(
        seconds_per_judgment=6.03 * 3600 / 324,
        test="binomial",
        source="Smith et al. 2022, §4.1",
        pilot="dialeval.report.pilot:pairwise_pilot",
    ),
    question_presets=ACUTE_QUESTIONS,
    importers=("acute-pairings", "parlai", "openai-messages", "dialeval"),
    paired=True,
    onboarding_check=True,
    templates=_P,
    instructions="instructions_acute.html",
    limits=(
        "Limits: ACUTE-Eval judges whole conversations, so a win says which conversations read better, "
        "not which turn made the difference; self-chats show how a bot talks to itself, not to people. "
        "The p-values are per pair (two-sided binomial) and not corrected for the number of pairs; "
        "the answer depends on the question's wording."
    ),
    answer_pairs="dialeval.report.answer:pairwise_pairs",
    excluded_bot_types=frozenset({"degraded"}),
    session_option="comparisons_per_unit",
    judge_guided=True,
    judge="dialeval.methods.acute.judge:acute",
)
