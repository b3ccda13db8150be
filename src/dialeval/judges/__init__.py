"""LLM judges: a bot answers a study's own questions on its units, beside the people.

- `tasks.py`: what one judge call is (`JudgeTask`), the per-method adapter (`JudgeAdapter`), and
  the constant that marks a judge's annotator (`JUDGE_PLATFORM`, in records.py).
- `prompts.py`: the wording shown to the judge (the annotators' own question) and its answer format.
- `parse.py`: the strict reading of an answer, with one clear error per failure.
- `common.py`: what the adapters share. Each method package's `judge.py` holds its adapter (named
  by `Method.judge`): the tasks to ask (ACUTE pairs, arena battles, PW-Turn candidates, Spot The
  Bot segments, Direct Assessment ratings, SM ratings) and the labels the audit compares between
  judge and people.
- `run.py`: running a judge over a study, resumably, with a concurrency limit, storing as it goes.
- `audit.py`: the report section (judge–human vs human–human agreement, position and length bias).
"""

from __future__ import annotations

from ..records import JUDGE_PLATFORM, is_judge_annotator

__all__ = ["JUDGE_PLATFORM", "is_judge_annotator"]
