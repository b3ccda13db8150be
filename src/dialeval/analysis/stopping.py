"""The report's `stopping` entry: the adaptive stopping rule in words and its per-pair table.

The state comes from scheduling/state.py (:func:`~dialeval.scheduling.state.study_state`), the same
replay the scheduler made while collecting, so the report states every decision the scheduler took;
this module only adds the prose (the rule, the selection rule, the literature) and the comparison
with the annotators filtered out later.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..config import AdaptiveConfig
from ..scheduling.pools import PairPool
from ..scheduling.state import AdaptiveState, adaptive_config, study_bots, study_state
from ..stats import sequential

__all__ = ["rule_description", "selection_description", "stopping_section"]


def rule_description(state: AdaptiveState, *, enabled: bool = True) -> str:
    """The stopping rule in words, with its parameters and the literature (for reports)."""
    cfg = state.config
    m = len(state.tests)
    if state.guided:
        test = (
            "anytime-valid sequential test of H0: P(a beats b) = 0.5 for each bot pair, judge-guided: "
            "people label units drawn by the judge's doubt, each answer enters as an importance-weighted "
            "correction of the judge's mean score (Zrnic & Candes 2024), and a betting martingale with "
            "predictable bets tests its mean (Waudby-Smith & Ramdas 2024, JRSS-B 86(1)); always-valid "
            f"p-value = running minimum of 1/K_n; each of m = {m} pairs tested at alpha/m = "
            f"{cfg.alpha:g}/{m * state.families} = {state.level:.4g} (Bonferroni over the pairs"
            + (f" of all {state.families} questions" if state.families > 1 else "")
            + f": study-wise error <= {cfg.alpha:g} however often it is checked); answers enter in the "
            "order their units were drawn, each counted as independent (no annotator blocks)"
        )
        return _with_stopping(state, test, enabled)
    test = (
        f"anytime-valid sequential test of H0: P(a beats b) = 0.5 for each bot pair: beta-binomial "
        f"{sequential.rule_text(state.prior).removeprefix('beta-binomial ')}, always-valid "
        f"p-value = running minimum of 1/M_n (Robbins 1970; Howard, Ramdas, McAuliffe & Sekhon 2021, "
        f"Ann. Statist. 49(2); Johari, Pekelis & Walsh 2022, Operations Research 70(3)); each of m = {m} "
        f"pairs tested at alpha/m = {cfg.alpha:g}/{m * state.families} = {state.level:.4g} (Bonferroni over "
        f"the pairs"
        + (f" of all {state.families} questions" if state.families > 1 else "")
        + f": study-wise error <= {cfg.alpha:g} however often it is checked); with annotator ids, one "
        f"factor per annotator block of at most {state.block} judgments (a test at the annotator level, "
        f"valid when annotators differ; Waudby-Smith & Ramdas 2023, JRSS-B 86(1))"
    )
    return _with_stopping(state, test, enabled)


def _with_stopping(state: AdaptiveState, test: str, enabled: bool) -> str:
    """The test's description followed by when a pair and the study stop."""
    cfg = state.config
    if not state.stopping:
        return f"no stopping (adaptive.stopping = none); p-values reported only. The test: {test}."
    stop = (
        "; a pair is decided at the first n with p <= alpha/m"
        + (
            "; a pair whose order follows from decided pairs by transitivity needs no more judgments"
            if state.transitive
            else ""
        )
        + "; the study stops when the order of every pair is known"
        + (f" or after {cfg.max_judgments} judgments" if cfg.max_judgments else "")
        + (". A tie counts as half a win." if state.guided else ". Ties count for no one.")
    )
    text = test[0].upper() + test[1:] + stop
    if not enabled:
        return (
            "Monitoring only, not used for stopping (adaptive.enabled = false: units were balanced "
            "across bot pairs). " + text
        )
    return text


def selection_description(config: AdaptiveConfig, *, enabled: bool = True) -> str:
    if not enabled:
        return "balanced (adaptive collection disabled): the bot pair with the fewest annotations so far"
    base = {
        "uniform": "uniform: the next unit's bot pair drawn uniformly among the pairs whose order is still open",
        "variance-reduction": (
            "variance-reduction (Chiang et al. 2024, Chatbot Arena, §5 eq. 9): the next "
            "unit's bot pair drawn among the open pairs with probability proportional to "
            "the drop in the standard error of its win rate that one more judgment buys"
        ),
        "rank-overlap": (
            "rank-overlap: the least judged open pair whose Bradley-Terry strength intervals still overlap"
        ),
    }[config.selection]
    if config.judge is not None:  # scheduling/tickets.py: the pair as above, the unit by the judge's doubt
        return (
            base + "; within the pair, the unit of its next ticket, drawn with probability proportional to the "
            f"square root of judge {config.judge}'s doubt (another open pair when the annotator has seen that "
            "unit); decided pairs get no new units"
        )
    return (
        base + " (the least used open pair when the annotator has already seen every unit of the drawn "
        "pair); decided pairs get no new units"
    )


def stopping_section(
    outcomes: Iterable[tuple],
    method: str,
    config: Any,
    bots: Sequence[str] | None = None,
    unfiltered: Iterable[tuple] | None = None,
    guided: dict[tuple[str, str], PairPool] | None = None,
) -> dict[str, Any]:
    """The report's `stopping` entry: {rule, selection, enabled, used_for_stopping, alpha, prior,
    m, per_pair_alpha, judgments, decided, ranking, pairs: stopping_table()}.

    `outcomes` are the kept judgments (a, b, winner[, annotator]) in judgment order. `unfiltered`
    (optional) adds the judgments of annotators filtered out later: a pair decided with them but
    no longer without them gets ``reopened_by_filtering: true`` and ``decided_before_filtering``
    (and is listed under the section's ``reopened_by_filtering``), so filtering after the fact
    never silently turns a decided pair back into an open one. `guided`: the question's judge-guided
    pools (scheduling/pools.py; outcomes then carry the ticket as fifth item)."""
    cfg = adaptive_config(config)
    outcomes = list(outcomes)
    names = list(bots) if bots is not None else study_bots(method, config)
    if len(names) < 2:
        names = list(dict.fromkeys(b for o in outcomes for b in (o[0], o[1])))
    if len(names) < 2:
        return {
            "enabled": cfg.enabled,
            "used_for_stopping": False,
            "rule": "fewer than two bots: no test",
            "selection": selection_description(cfg, enabled=cfg.enabled),
            "pairs": [],
        }
    st = study_state(outcomes, method, config, bots=names, final=True, guided=guided)
    table = st.stopping_table()
    reopened = []
    if unfiltered is not None:
        unfiltered = list(unfiltered)
        if len(unfiltered) != len(outcomes):
            everyone = {
                (r["a"], r["b"]): r
                for r in study_state(unfiltered, method, config, bots=names, final=True, guided=guided).stopping_table()
            }
            for row in table:
                other = everyone.get((row["a"], row["b"]))
                if other and other["decided"] and not row["decided"]:
                    row["reopened_by_filtering"] = True
                    row["decided_before_filtering"] = {"winner": other["winner"], "stopped_at_n": other["stopped_at_n"]}
                    reopened.append((row["a"], row["b"]))
    return {
        "enabled": cfg.enabled,
        "used_for_stopping": bool(cfg.enabled and st.stopping),
        "rule": rule_description(st, enabled=cfg.enabled),
        "selection": selection_description(cfg, enabled=cfg.enabled),
        "alpha": cfg.alpha,
        "prior": st.prior,
        "m": len(st.tests) * st.families,
        "per_pair_alpha": st.level,
        "judgments": sum(t.n + t.ties for t in st.tests.values()),
        "test_level": "annotator" if any(t.clustered for t in st.tests.values()) else "judgment",
        "decided": st.done,
        "ranking": st.ranking(),
        "reopened_by_filtering": reopened,
        "judge_guided": _guided_summary(cfg, guided),
        "pairs": table,
    }


def _guided_summary(cfg: AdaptiveConfig, guided: dict[tuple[str, str], PairPool] | None) -> dict[str, Any] | None:
    """How the judge steered collection (None when it did not): the judge, the mix, and per pair how
    many of its units the judge had labelled when the pools were frozen."""
    if not guided:
        return None
    return {
        "judge": cfg.judge,
        "mix": cfg.judge_mix,
        "rule": (
            "units drawn with probability proportional to the square root of the judge's uncertainty "
            f"(its two side orders disagreeing), mixed {cfg.judge_mix:g} with uniform; each labelled draw "
            "enters the pair's test as the judge's mean score over the pair's units plus the person's "
            "correction weighted by 1/(units x draw probability) (importance-sampled prediction-powered "
            "inference, Zrnic & Candes 2024), tested for a win rate of 1/2 by a betting martingale "
            "(Waudby-Smith & Ramdas 2024, JRSS-B 86(1)); win rates are these pool-weighted estimates with "
            "anytime-valid confidence sequences, not the raw share of the drawn units"
        ),
        "pairs": [{"a": p.a, "b": p.b, "units": len(p.units), "judge_labelled": p.judged} for p in guided.values()],
    }
