"""Chatbot Arena battles: two anonymous models answer the same messages and the annotator votes.

Two ways in, one analysis: battles imported from the public LMSYS releases (``dialeval import
arena``, formats/arena.py) and battles collected live on our pages (protocol.py: the annotator
chats with both models side by side and votes A / B / tie / both bad, per turn or at the end).
Both give judgments of question ``battle`` in the shape of records.py, ranked by analysis.py.
"""

from __future__ import annotations

from ...registry import Method, PlanningModel, SimulationModel

_P = __name__

# Seconds per vote: no published figure for Chatbot Arena (Chiang et al. 2024 report votes, not
# time). Assumption: half of PW-Turn's 89 s per rating (Smith et al. 2022, §4.1: 5.73 worker-hours, 231
# ratings) -- the same live chat and two replies to read, but no persona and no written reason.
SECONDS_PER_VOTE = 5.73 * 3600 / 231 / 2

METHOD = Method(
    id="arena",
    title="Arena battle",
    order=60,
    paper="Chiang et al. 2024",
    options=f"{_P}.options:ArenaOptions",
    analysis=f"{_P}.analysis:analyze_arena",
    protocol=f"{_P}.protocol:ArenaProtocol",
    settle=f"{_P}.settle:settle_held_votes",
    figures=f"{_P}.figures:figures",
    methods_text=(
        "Each vote compared two anonymous models answering the same messages: model_a, model_b, tie or "
        "tie (both bad); in a live battle the annotator chatted with both at once, side by side, and "
        "voted per turn or at the end, and a vote cast after a model named itself was left out of the "
        "ranking. Ratings are a Bradley-Terry fit on an Elo-like scale; ties (both kinds) count as half a "
        "win for each model, as Chatbot Arena does. Intervals: percentile bootstrap over battles and the "
        "sandwich (robust) normal interval; the rank is 1 + the number of models whose interval lies "
        "wholly above."
    ),
    study_template=f"{_P}:study.yaml",
    demo={
        "bots": [
            {"name": "retrieval", "type": "retrieval"},
            {"name": "eliza", "type": "eliza"},
            {"name": "repeat", "type": "repeat"},
        ],
        "annotation": {"units_per_annotator": 3},
        "protocol": {"vote": "per-turn", "continue_with": "own", "turns": 3, "battles_per_pair": 10},
    },
    simulation=SimulationModel(
        step=f"{_P}.simulation:step",
        # an acknowledged vote becomes one judgment: at "next", when its change window passes, or
        # when the crowd has left (settle); a change within the window is the same judgment
        judgment_actions=("vote",),
        seconds={"arena": 20.0},
        abandon_within=8,
        corpus=True,
    ),
    planning=PlanningModel(
        seconds_per_judgment=SECONDS_PER_VOTE,
        test="binomial",
        source=(
            "assumption: half of PW-Turn's 89 s per rating (Smith et al. 2022, §4.1); no published time per Arena vote"
        ),
        draws=True,
        pilot="dialeval.report.pilot:pairwise_pilot",
    ),
    importers=("arena",),
    judge="dialeval.methods.arena.judge:arena",
    paired=True,
    live=True,
    templates=_P,
    instructions="instructions_arena.html",
    limits=(
        "Limits: each battle's votes come from one annotator's own messages, so prompts differ "
        "between pairs; per-turn votes of one battle are not independent; ties count half a win; "
        "votes after a model named itself are not ranked."
    ),
    answer_pairs=f"{_P}.answer:pairs",
    excluded_bot_types=frozenset({"imported"}),
    # what analysis.battle_frame reads: a report on 1M battles loads these columns, not 1M objects
    report_columns={
        "question": "battle",
        "value": {
            "model_a": "string",
            "model_b": "string",
            "winner": "string",
            "turn": "integer",
            "anonymous": "boolean",
            "conversation_a": "string",
            "conversation_b": "string",
        },
        "meta": {"battle": "string", "category": "string", "item": "string"},
    },
    session_option="turns",
)
