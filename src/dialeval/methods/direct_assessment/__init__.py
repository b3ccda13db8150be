"""Direct Assessment: annotators chat live and rate statements on 0-100 sliders; a degraded bot checks them."""

from __future__ import annotations

from ...registry import Method, PlanningModel, SimulationModel

_P = __name__

METHOD = Method(
    id="direct-assessment",
    title="Direct Assessment with a degraded quality-control bot",
    order=50,
    paper="Ji et al. 2022",
    options=f"{_P}.options:DirectAssessmentOptions",
    analysis=f"{_P}.analysis:analyze_direct_assessment",
    protocol=f"{_P}.protocol:DirectAssessmentProtocol",
    figures=f"{_P}.figures:figures",
    methods_text=(
        "Annotators chatted live (at least 10 inputs) and rated seven statements on 0–100 "
        "sliders; every HIT held one conversation with a deliberately degraded bot. Annotators "
        "whose ratings did not separate the degraded bot (one-sided Mann-Whitney, p < 0.05, "
        "positive criteria) were filtered. Scores are per-annotator z-scores; pairs of systems "
        "are compared with one-sided Mann-Whitney tests."
    ),
    study_template=f"{_P}:study.yaml",
    demo={
        "bots": [
            {"name": "retrieval", "type": "retrieval"},
            {"name": "eliza", "type": "eliza"},
            {"name": "repeat", "type": "repeat"},
            {"name": "qc", "type": "degraded", "options": {"seed": 7}},
        ],
        "protocol": {"min_inputs": 10, "qc_bot": "qc", "topic": "free", "hits_per_annotator": 1},
    },
    simulation=SimulationModel(
        step=f"{_P}.simulation:step",
        judgment_actions=("rate",),
        seconds={"direct-assessment": 45.0},
        abandon_within=12,
        corpus=True,
        checks=f"{_P}.simulation:qc_reasons",
    ),
    # Ji et al. 2022, Table 1: 6.68 min per conversation (Free run 1)
    planning=PlanningModel(
        seconds_per_judgment=6.68 * 60,
        test="mannwhitney",
        source="Ji et al. 2022, Table 1",
        pilot="dialeval.methods.direct_assessment.pilot:pilot",
    ),
    importers=("dialogue-eval",),
    live=True,
    templates=_P,
    instructions="instructions_direct_assessment.html",
    limits=(
        "Limits: Direct Assessment scores are standardised per annotator (z), so they rank "
        "systems within this study and are not comparable across studies; annotators who did "
        "not rate the degraded bot lower are removed before scoring; the pairwise tests are "
        "one-sided Mann-Whitney tests, not corrected for the number of pairs."
    ),
    answer_pairs=f"{_P}.answer:pairs",
    judge="dialeval.methods.direct_assessment.judge:direct_assessment",
    report_reads_turns=False,  # conversations' bots and meta only
)
