"""A simulated crowd that works through the real web app: plan a study before anybody is paid.

    from dialeval.simulate import simulate_study, simulate_demo
    result = simulate_study("my-study", annotators=40, seed=0, careless_share=0.15)

The annotator model (latent bot strengths, noise, position bias, scale use, careless annotators,
timing, abandon and refresh) is in model.py and docs/simulated-crowd.md.
"""

from .annotator import AnnotatorLog, SimulatedAnnotator
from .crowd import (
    SimulationResult,
    recovered_order,
    simulate_demo,
    simulate_study,
    study_truth,
    write_study_report,
)
from .model import (
    AnnotatorProfile,
    SimTruth,
    chat_message,
    choose_pairwise,
    da_ratings,
    likert,
    sample_profile,
    slider,
    stb_label,
)
from .server import running_app

__all__ = [
    "AnnotatorLog",
    "AnnotatorProfile",
    "SimTruth",
    "SimulatedAnnotator",
    "SimulationResult",
    "chat_message",
    "choose_pairwise",
    "da_ratings",
    "likert",
    "recovered_order",
    "running_app",
    "sample_profile",
    "simulate_demo",
    "simulate_study",
    "slider",
    "stb_label",
    "study_truth",
    "write_study_report",
]
