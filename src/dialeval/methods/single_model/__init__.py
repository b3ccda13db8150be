"""SM-Turn + SM-Dialog: annotators chat live with one bot, mark each reply and rate the conversation."""

from __future__ import annotations

from ...registry import Method, PlanningModel, SimulationModel

_P = __name__

METHOD = Method(
    id="single-model",
    title="SM-Turn + SM-Dialog",
    order=30,
    paper="Smith et al. 2022",
    options=f"{_P}.options:SingleModelOptions",
    analysis=f"{_P}.analysis:analyze_single_model",
    protocol=f"{_P}.protocol:SingleModelProtocol",
    figures=f"{_P}.figures:figures",
    methods_text=(
        "Annotators chatted live with one bot, marked each bot reply as engaging, human-like and/or "
        "interesting, and gave three 1–5 ratings at the end. We report per-turn success rates, "
        "winner-takes-all rates, Likert means, t-tests and bootstrapped effective win rates."
    ),
    study_template=f"{_P}:study.yaml",
    demo={
        "bots": [
            {"name": "retrieval", "type": "retrieval"},
            {"name": "eliza", "type": "eliza"},
            {"name": "repeat", "type": "repeat"},
        ],
        "protocol": {"bot_turns": 6, "conversations_per_bot": 10},
    },
    simulation=SimulationModel(
        step=f"{_P}.simulation:step",
        judgment_actions=("rate", "final"),
        seconds={"single-model-turn": 6.0, "single-model-dialog": 25.0},
        abandon_within=8,
        corpus=True,
    ),
    # Smith et al. 2022, §4.1: SM-Turn+SM-Dialog, 4.39 h per model, 68 conversations
    planning=PlanningModel(
        seconds_per_judgment=4.39 * 3600 / 68,
        test="ttest",
        source="Smith et al. 2022, §4.1",
        pilot="dialeval.methods.single_model.pilot:pilot",
    ),
    live=True,
    templates=_P,
    instructions="instructions_single_model.html",
    limits=(
        "Limits: SM-Turn and SM-Dialog rate one bot at a time, so differences between bots rest "
        "on different annotators and conversations; Likert ratings are treated as interval data "
        "(t-tests), and the p-values are not corrected for the number of pairs and metrics."
    ),
    answer_pairs=f"{_P}.answer:pairs",
    judge="dialeval.methods.single_model.judge:single_model",
)
