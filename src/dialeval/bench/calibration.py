"""Published effect sizes that the adaptive-collection benchmark simulates.

1. **ACUTE-Eval PersonaChat** (Li, Weston & Roller 2019, Table 2: engagingness question,
   human–model chats, 8 systems). In the table the *column* names the winner and the *row* the
   loser ("Wins % matches" across, "Loses % matches" down): the cell in row RC, column H is 67,
   meaning H won 67% of its matches against RC; every cell and its mirror add up to 100. The text
   gives no per-pair match counts, so Bradley–Terry strengths are fitted as if every pair had been
   judged equally often: theta maximises sum_{i≠j} P_ij log sigmoid(theta_i - theta_j) (fit_bt on the
   win-share matrix; mean zero). The table is not exactly transitive (e.g. RC–KV is 50/50, and the
   paper's stated order has LIC above INT while BT puts INT above LIC); the simulation draws every
   judgment from the BT model, so the "true" ranking is the BT order
   H > PE > INT > LIC > HF > INQ > KV > RC, with adjacent win rates of 51.3%–54.6%.
   Self-chat Table 4 is kept too (`PERSONACHAT_SELFCHAT`).

2. **Smith et al. (2022)**, Table 3: win rates of BlenderBot3B against BlenderBot3B-M0
   (Length), BlenderBot90M (Size) and Reddit3B (Fine-tuning), for PW-Turn (turns 2–6, WTA) and
   PW-Dialog on human–model chats and on self-chats, for the preference, humanness and
   interestingness questions. Each comparison is a two-bot study; win rates within 2 points of 50%
   (Size, PW-Turn preference: 49%) are flagged `near_null`: no procedure can decide them at a
   realistic cost, and they are reported apart from the headline numbers.
"""

from __future__ import annotations

import numpy as np

from ..stats.bradley_terry import fit_bt
from ..stats.study_design import Scenario, bt_probabilities

__all__ = [
    "PAPER000_TABLE3",
    "PERSONACHAT_BOTS",
    "PERSONACHAT_HUMAN_MODEL",
    "PERSONACHAT_SELFCHAT",
    "Scenario",
    "aa_scenario",
    "bt_from_table",
    "bt_probabilities",
    "paper000_scenarios",
    "personachat_scenario",
    "win_share_matrix",
]

PERSONACHAT_BOTS = ["RC", "KV", "INQ", "HF", "INT", "LIC", "PE", "H"]
# Li et al. 2019, Table 2, cell [row][col] = % of matches that COLUMN won against ROW (diagonal 0).
PERSONACHAT_HUMAN_MODEL = [
    [0, 50, 58, 54, 66, 68, 69, 67],
    [50, 0, 57, 55, 57, 57, 61, 60],
    [42, 43, 0, 51, 59, 52, 62, 71],
    [46, 45, 49, 0, 55, 54, 57, 64],
    [34, 43, 41, 45, 0, 52, 54, 52],
    [32, 43, 48, 46, 48, 0, 53, 65],
    [31, 39, 38, 43, 46, 47, 0, 53],
    [33, 40, 29, 36, 48, 35, 47, 0],
]
# Li et al. 2019, Table 4 (self-chats), same layout.
PERSONACHAT_SELFCHAT = [
    [0, 58, 67, 42, 73, 68, 74, 74],
    [42, 0, 51, 26, 57, 60, 63, 71],
    [33, 49, 0, 25, 63, 66, 63, 72],
    [58, 74, 75, 0, 81, 81, 82, 81],
    [27, 43, 37, 16, 0, 51, 51, 63],
    [32, 40, 34, 19, 49, 0, 55, 60],
    [26, 37, 37, 18, 49, 45, 0, 61],
    [26, 29, 28, 19, 37, 40, 39, 0],
]

# Smith et al. 2022, Table 3: win rate of BlenderBot3B vs the other model, per comparison, question and method.
PAPER000_TABLE3 = {
    "length (BB3B vs BB3B-M0)": {
        "preference": {"pw-turn": 0.74, "pw-dialog-human": 0.77, "pw-dialog-self": 0.82},
        "humanness": {"pw-turn": 0.79, "pw-dialog-human": 0.77, "pw-dialog-self": 0.83},
        "interestingness": {"pw-turn": 0.84, "pw-dialog-human": 0.85, "pw-dialog-self": 0.73},
    },
    "size (BB3B vs BB90M)": {
        "preference": {"pw-turn": 0.49, "pw-dialog-human": 0.56, "pw-dialog-self": 0.55},
        "humanness": {"pw-turn": 0.54, "pw-dialog-human": 0.61, "pw-dialog-self": 0.55},
        "interestingness": {"pw-turn": 0.55, "pw-dialog-human": 0.59, "pw-dialog-self": 0.57},
    },
    "fine-tuning (BB3B vs Reddit3B)": {
        "preference": {"pw-turn": 0.93, "pw-dialog-human": 0.70, "pw-dialog-self": 0.66},
        "humanness": {"pw-turn": 0.93, "pw-dialog-human": 0.54, "pw-dialog-self": 0.61},
        "interestingness": {"pw-turn": 0.85, "pw-dialog-human": 0.59, "pw-dialog-self": 0.64},
    },
}


def win_share_matrix(table) -> np.ndarray:
    """W[i, j] = share of i-vs-j matches won by i, from a column-wins/row-loses percent table."""
    T = np.asarray(table, dtype=float)
    W = T.T / 100.0
    if not np.allclose(W + W.T, 1 - np.eye(len(W)), atol=0.011):
        raise ValueError("table cells and their mirrors should add up to 100%")
    return W


def bt_from_table(table) -> np.ndarray:
    """Bradley–Terry log-strengths (mean zero) fitted to a win-share table as if every pair had
    been judged equally often (see the module docstring)."""
    return fit_bt(win_share_matrix(table) * 100.0, l2=1e-9)


def personachat_scenario(selfchat: bool = False) -> Scenario:
    table = PERSONACHAT_SELFCHAT if selfchat else PERSONACHAT_HUMAN_MODEL
    theta = bt_from_table(table)
    which = "Table 4 (self-chats)" if selfchat else "Table 2 (human-model chats)"
    return Scenario(
        name="personachat-acute" + ("-selfchat" if selfchat else ""),
        bots=list(PERSONACHAT_BOTS),
        probs=bt_probabilities(theta),
        source=f"Li et al. 2019 (ACUTE-Eval) {which}, engagingness; Bradley-Terry fit to the win-share table",
        strengths=[float(x) for x in theta],
    )


def _two_bot(name: str, rate: float, source: str) -> Scenario:
    P = np.array([[0.5, rate], [1 - rate, 0.5]])
    return Scenario(
        name=name,
        bots=["BB3B", "other"],
        probs=P,
        source=source,
        near_null=abs(rate - 0.5) < 0.02,
        extra={"win_rate": rate},
    )


def paper000_scenarios(
    questions: tuple[str, ...] = ("preference",), methods: tuple[str, ...] = ("pw-turn", "pw-dialog-human")
) -> list[Scenario]:
    """Two-bot studies from Smith et al. 2022, Table 3 (default: the preference question, PW-Turn and PW-Dialog
    on human-model chats: the three comparisons × two methods)."""
    out = []
    for comp, by_q in PAPER000_TABLE3.items():
        for q in questions:
            for m in methods:
                rate = by_q[q][m]
                out.append(
                    _two_bot(
                        f"000:{comp.split(' ')[0]}:{q}:{m}",
                        rate,
                        f"Smith et al. 2022, Table 3, {comp}, {q}, {m}: BB3B wins {rate:.0%}",
                    )
                )
    return out


def aa_scenario(K: int = 2) -> Scenario:
    """A/A: K identical bots (every win rate 50%)."""
    return Scenario(
        name=f"aa-{K}", bots=[f"same{i}" for i in range(K)], probs=np.full((K, K), 0.5), source="A/A: identical bots"
    )
