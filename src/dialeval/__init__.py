"""dialeval: human evaluation of chatbots, from study file to report."""

__version__ = "0.1.0"

METHODS = ("acute", "pairwise-turn", "single-model", "spot-the-bot", "direct-assessment")
