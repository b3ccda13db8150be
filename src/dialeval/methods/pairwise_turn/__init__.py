"""PW-Turn: annotators chat live; at every bot turn two bots answer and the annotator picks one."""

from __future__ import annotations

from ...registry import Method, PlanningModel, SimulationModel
from .questions import PAIRWISE_TURN_QUESTIONS

_P = __name__

METHOD = Method(
    id="pairwise-turn",
    title="PW-Turn",
    order=20,
    paper="Smith et al. 2022",
    options=f"{_P}.options:PairwiseTurnOptions",
    analysis=f"{_P}.analysis:analyze_pairwise_turn",
    protocol=f"{_P}.protocol:PairwiseTurnProtocol",
    figures=f"{_P}.figures:figures",
    methods_text=(
        "Annotators chatted live; at every bot turn two bots answered the same history, the two "
        "replies were shown in random order, and the annotator chose one (with a justification), "
        "which continued the conversation. We report Lin, Sqr and winner-takes-all win rates, "
        "per-turn win rates and two-sided binomial tests."
    ),
    study_template=f"{_P}:study.yaml",
    demo={
        "bots": [{"name": "retrieval", "type": "retrieval"}, {"name": "eliza", "type": "eliza"}],
        "questions": [{"id": "preference"}],
        "onboarding": {"enabled": True, "on_fail": "block", "tries": 2},
        "protocol": {"bot_turns": 6, "conversations_per_pair": 20},
    },
    simulation=SimulationModel(
        step=f"{_P}.simulation:step",
        judgment_actions=("choose", "onboarding"),
        seconds={"pairwise-turn": 20.0},
        abandon_within=8,
        corpus=True,
    ),
    # Smith et al. 2022, §4.1: PW-Turn, 5.73 worker-hours for 231 ratings
    planning=PlanningModel(
        seconds_per_judgment=5.73 * 3600 / 231,
        test="binomial",
        source="Smith et al. 2022, §4.1",
        pilot="dialeval.report.pilot:pairwise_pilot",
    ),
    question_presets=PAIRWISE_TURN_QUESTIONS,
    paired=True,
    live=True,
    onboarding_check=True,
    templates=_P,
    instructions="instructions_pairwise_turn.html",
    limits=(
        "Limits: PW-Turn compares the two bots' replies to the same history, which the chosen "
        "replies shape, so later turns are not independent; win rates are over bot turns "
        "(here the report's turn range), p-values per pair (two-sided binomial), not corrected "
        "for the number of pairs."
    ),
    answer_pairs="dialeval.report.answer:pairwise_pairs",
    excluded_bot_types=frozenset({"imported"}),
    session_option="bot_turns",
    judge="dialeval.methods.pairwise_turn.judge:pairwise_turn",
)
