"""Spot The Bot: annotators label the speakers of bot-bot conversation segments as human or bot."""

from __future__ import annotations

from ...registry import Method, PlanningModel, SimulationModel

_P = __name__

METHOD = Method(
    id="spot-the-bot",
    title="Spot The Bot",
    order=40,
    paper="Deriu et al. 2020",
    options=f"{_P}.options:SpotTheBotOptions",
    analysis=f"{_P}.analysis:analyze_spot_the_bot",
    protocol=f"{_P}.protocol:SpotTheBotProtocol",
    figures=f"{_P}.figures:figures",
    methods_text=(
        "Bot–bot conversations were cut into segments of the first k exchanges; annotators labelled "
        "each speaker as human, bot or unsure and compared the speakers on fluency, sensibleness and "
        "specificity. We report pairwise win rates with chi-square tests, bootstrap rank ranges and "
        "clusters, TrueSkill, Turnbull survival curves with generalized log-rank tests "
        "(Bonferroni-adjusted) and Cox models of the features."
    ),
    study_template=f"{_P}:study.yaml",
    demo={
        "bots": [
            {"name": "retrieval", "type": "retrieval"},
            {"name": "eliza", "type": "eliza"},
            {"name": "repeat", "type": "repeat"},
        ],
        "generation": {"mode": "bot-bot", "conversations": 6, "turns": 5, "human_conversations": 6},
        "protocol": {
            "segment_exchanges": [2, 3, 5],
            "bot_segments_per_package": 8,
            "human_segments_per_package": 2,
            "packages_per_annotator": 2,
            "annotations_per_segment": 2,
        },
    },
    simulation=SimulationModel(
        step=f"{_P}.simulation:step",
        judgment_actions=("segment",),
        seconds={"spot-the-bot": 25.0},
        abandon_within=5,
    ),
    # Deriu et al. 2020, "Time efficiency": ~25 s per annotation (PersonaChat, DailyDialog)
    planning=PlanningModel(
        seconds_per_judgment=25.0,
        test="binomial",
        source="Deriu et al. 2020, Time efficiency",
        draws=True,
        pilot="dialeval.report.pilot:pairwise_pilot",
    ),
    importers=("spot-the-bot",),
    templates=_P,
    instructions="instructions_spot_the_bot.html",
    limits=(
        "Limits: Spot The Bot ranks bots by how long they pass as human in bot–bot "
        "conversations, which is not the same as being a good partner; the win rates use the "
        "paper's chi-square tests per pair, not corrected for the number of pairs; rank ranges "
        "come from a bootstrap over conversations."
    ),
    answer_pairs=f"{_P}.answer:pairs",
    judge="dialeval.methods.spot_the_bot.judge:spot_the_bot",
    report_reads_turns=False,  # conversations' bots and meta only
)
