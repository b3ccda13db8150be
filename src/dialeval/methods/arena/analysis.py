"""Chatbot Arena battles: Bradley–Terry leaderboard with ties, intervals, win rates, battle counts.

Judgment values (question ``battle``): {"model_a", "model_b", "winner": "model_a" | "model_b" | "tie"
| "tie (bothbad)", "turn"?}. Both kinds of tie count as half a win for each model, as Chatbot Arena
does (so a tie pulls two ratings together). Battles of a model against itself carry no information
and are dropped. Votes of annotators on of an LLM judge (``--judges`` files, `dialeval judge`) are kept out of
the leaderboard and set against the crowd under ``judges``.

Votes collected live (methods/arena/protocol.py) have the same shape plus ``anonymous``: a vote cast
after a bot named itself (``"anonymous": false``) is left out of the leaderboard and counted under
``non_anonymous``. With turn numbers, ``turn_curve`` gives each model's win rate per turn (ties half).

Intervals, both at level `ci`: a percentile bootstrap over battles (``ci_low``/``ci_high``, with
the central interval of each model's bootstrap rank, ``rank_interval``) and the sandwich (robust)
normal interval (``sandwich_low``/``sandwich_high``). ``rank`` is Arena's rank: 1 + the number of
models whose lower bound is above this model's upper bound (bootstrap bounds; ``rank_sandwich``
with the sandwich bounds).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from dialeval.analysis.annotators import (
    annotator_options,
    cap_prompts,
    flagged,
    model_judges,
    pairwise_labels,
    pairwise_model_section,
    vote_frame,
)
from dialeval.analysis.ranking import (
    provisional,
    ranking_options,
    robustness_audit,
    segment_boards,
    style_of_votes,
    tie_model_board,
    tie_section,
    tiers,
)
from dialeval.analysis.shared import filtered_annotator_ids
from dialeval.records import Dataset, JudgmentColumns, is_judge_annotator
from dialeval.stats.bradley_terry import (
    aggregate_votes,
    bradley_terry,
    ci_rank,
    fit_bt,
    one_blas_thread,
    pairwise_tables,
    sandwich_intervals,
    to_elo,
)

__all__ = ["analyze_arena", "battle_frame"]

QUESTION = "battle"
TIES_NOTE = (
    "Ties ('tie' and 'tie (bothbad)') count as half a win for each model, as Chatbot Arena does; "
    "battles of a model against itself are dropped."
)
# the `ranking: {ties: ...}` choice of the study file (analysis/ranking.py)
TIE_NOTES = {
    "half": TIES_NOTE,
    "ignore": "Ties ('tie' and 'tie (bothbad)') are left out of the ratings (ranking.ties: ignore); "
    "battles of a model against itself are dropped.",
    "davidson": "Ratings from the Davidson (1970) model, which gives a tie its own probability "
    "(ranking.ties: davidson); intervals are Wald intervals of that fit.",
    "rao-kupper": "Ratings from the Rao-Kupper (1967) model, which gives a tie its own probability "
    "(ranking.ties: rao-kupper); intervals are Wald intervals of that fit.",
}


COLUMNS = [
    "annotator",
    "battle",
    "model_a",
    "model_b",
    "winner",
    "turn",
    "anonymous",
    "category",
    "text_a",
    "text_b",
    "prompt",
]


def _prompts(dataset: Dataset) -> dict[str, str]:
    """The first message a person wrote in each conversation (the battle's prompt)."""
    out: dict[str, str] = {}
    for conv in dataset.conversations:
        for t in conv.turns:
            if t.bot is None and not t.is_seed and t.text.strip():
                out[conv.id] = t.text
                break
    return out


def answer_texts(dataset: Dataset) -> tuple[dict[str, str], dict[tuple[str, int, str], str]]:
    """The bots' text a vote compared: per conversation id (imported battles, one model each), and
    per (conversation, turn, bot) from the candidates of live per-turn battles."""
    whole: dict[str, str] = {}
    per_turn: dict[tuple[str, int, str], str] = {}
    for conv in dataset.conversations:
        bot_text = [t.text for t in conv.turns if t.bot is not None and not t.is_seed]
        if bot_text:
            whole[conv.id] = "\n\n".join(bot_text)
        for t in conv.turns:
            if t.candidates and isinstance(t.meta.get("turn"), int):
                for c in t.candidates:
                    if isinstance(c, dict) and c.get("bot") and isinstance(c.get("text"), str):
                        per_turn[(conv.id, t.meta["turn"], c["bot"])] = c["text"]
    return whole, per_turn


def battle_frame(dataset: Dataset, annotators: set[str] | None = None) -> pd.DataFrame:
    """One row per battle vote: annotator, battle, model_a, model_b, winner, turn, anonymous, the
    prompt's category (judgment meta ``category``, when the data have one) and the two answers'
    text when the data hold it (text_a, text_b; else None)."""
    whole, per_turn = answer_texts(dataset)
    prompts = _prompts(dataset)
    if isinstance(dataset.judgments, JudgmentColumns):
        return _battle_columns(dataset.judgments.frame, annotators, whole, per_turn, prompts)
    rows = []
    for j in dataset.judgments:
        if j.question != QUESTION or not isinstance(j.value, dict):
            continue
        if annotators is not None and j.annotator_id not in annotators:
            continue
        v = j.value
        text_a, text_b = whole.get(v.get("conversation_a") or ""), whole.get(v.get("conversation_b") or "")
        if text_a is None and j.conversation_id and isinstance(v.get("turn"), int):
            text_a = per_turn.get((j.conversation_id, v["turn"], str(v.get("model_a"))))
            text_b = per_turn.get((j.conversation_id, v["turn"], str(v.get("model_b"))))
        rows.append(
            {
                "annotator": j.annotator_id,
                "battle": j.meta.get("battle"),
                "model_a": v.get("model_a"),
                "model_b": v.get("model_b"),
                "winner": v.get("winner"),
                "turn": v.get("turn"),
                "anonymous": v.get("anonymous") is not False,  # imported votes: anonymous
                "category": j.meta.get("category"),
                "text_a": text_a,
                "text_b": text_b if text_a is not None else None,
                "prompt": prompts.get(j.conversation_id or v.get("conversation_a") or ""),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _rows(frame: pd.DataFrame, keep: pd.Series) -> pd.DataFrame:
    """frame[keep], without copying a million votes when every row is kept (the usual case)."""
    return frame if bool(keep.all()) else frame[keep]


def _battle_columns(
    frame: pd.DataFrame,
    annotators: set[str] | None,
    whole: dict[str, str],
    per_turn: dict[tuple[str, int, str], str],
    prompts: dict[str, str],
) -> pd.DataFrame:
    """battle_frame of judgments read as columns (records.JudgmentColumns): the same rows, built
    column by column with pandas instead of a dict per vote."""
    if annotators is not None:
        frame = _rows(frame, frame["annotator"].isin(annotators))
    anonymous = frame["value.anonymous"]
    out = pd.DataFrame(
        {
            "annotator": frame["annotator"],
            "battle": frame["meta.battle"],
            "model_a": frame["value.model_a"],
            "model_b": frame["value.model_b"],
            "winner": frame["value.winner"],
            "turn": frame["value.turn"],
            "anonymous": ~(anonymous.notna() & (anonymous == False)),  # noqa: E712 - imported votes: anonymous
            "category": frame["meta.category"],
        }
    ).reset_index(drop=True)
    text_a: list[str | None] = [None] * len(out)
    text_b: list[str | None] = [None] * len(out)
    if whole:  # imported battles with their text: one conversation per side
        text_a = [whole.get(c or "") for c in frame["value.conversation_a"].tolist()]
        text_b = [whole.get(c or "") for c in frame["value.conversation_b"].tolist()]
    if per_turn:  # live per-turn battles: the candidates of the voted turn
        turns, convs = frame["value.turn"].tolist(), frame["conversation"].tolist()
        a, b = frame["value.model_a"].tolist(), frame["value.model_b"].tolist()
        for k, (conv, turn) in enumerate(zip(convs, turns)):
            if text_a[k] is None and isinstance(conv, str) and conv and turn == turn and turn is not None:
                text_a[k] = per_turn.get((conv, int(turn), str(a[k])))
                text_b[k] = per_turn.get((conv, int(turn), str(b[k])))
    out["text_a"] = text_a
    out["text_b"] = [tb if ta is not None else None for ta, tb in zip(text_a, text_b)]
    out["prompt"] = [
        prompts.get((c if isinstance(c, str) and c else None) or (ca if isinstance(ca, str) else "") or "")
        for c, ca in zip(frame["conversation"].tolist(), frame["value.conversation_a"].tolist())
    ]
    return out[COLUMNS]


def turn_curve(votes: pd.DataFrame) -> dict[str, dict[str, dict[str, float | int]]]:
    """Each model's win rate at each turn (ties half a win): {model: {turn: {"win_rate", "n"}}}."""
    v = votes[["model_a", "model_b", "winner", "turn"]].dropna(subset=["turn"])  # the columns read, not all
    if v.empty:
        return {}
    turn = v["turn"].astype(int).to_numpy()
    score_a = np.where(v["winner"] == "model_a", 1.0, np.where(v["winner"] == "model_b", 0.0, 0.5))
    sides = pd.concat(
        [
            pd.DataFrame({"model": v["model_a"].to_numpy(), "turn": turn, "score": score_a}),
            pd.DataFrame({"model": v["model_b"].to_numpy(), "turn": turn, "score": 1.0 - score_a}),
        ]
    )
    table = sides.groupby(["model", "turn"])["score"].agg(["mean", "size"])
    out: dict[str, dict[str, dict[str, float | int]]] = {}
    for (model, k), row in table.iterrows():
        out.setdefault(str(model), {})[str(int(k))] = {"win_rate": round(float(row["mean"]), 4), "n": int(row["size"])}
    return out


def _matrix(names: list[str], values: np.ndarray, order: list[str], digits: int | None) -> dict[str, Any]:
    index = {n: i for i, n in enumerate(names)}
    out: dict[str, Any] = {}
    for row in order:
        cells: dict[str, float | int | None] = {}
        for col in order:
            x = values[index[row], index[col]]
            if row == col or np.isnan(x):
                cells[col] = None
            else:
                cells[col] = round(float(x), digits) if digits is not None else int(x)
        out[row] = cells
    return out


def _judges(dataset: Dataset, crowd: pd.DataFrame) -> dict[str, Any]:
    judges = [a.id for a in dataset.annotators if is_judge_annotator(a)]
    if not judges:
        return {}
    human = crowd.drop_duplicates("battle").set_index("battle")["winner"]
    out = {}
    for judge in judges:
        votes = battle_frame(dataset, {judge}).drop_duplicates("battle").set_index("battle")["winner"]
        both = pd.concat([human.rename("crowd"), votes.rename("judge")], axis=1, join="inner")
        decisive = both[both["crowd"].isin(["model_a", "model_b"]) & both["judge"].isin(["model_a", "model_b"])]
        out[judge] = {
            "battles": len(both),
            "agreement_non_tie": round(float((decisive["crowd"] == decisive["judge"]).mean()), 4)
            if len(decisive)
            else None,
            "non_tie_battles": len(decisive),
            "share_model_a": round(float((votes == "model_a").mean()), 4) if len(votes) else None,
            "share_tie": round(float(votes.str.startswith("tie").mean()), 4) if len(votes) else None,
        }
    return out


def _style_and_segments(
    dataset: Dataset, votes: pd.DataFrame, systems: list[dict[str, Any]], n_boot: int, ci: float, seed: int
) -> dict[str, Any]:
    """Style control where both answers' text is known, leaderboards per prompt category and per
    annotator platform (analysis/ranking.py)."""
    out: dict[str, Any] = {}
    texted = votes.dropna(subset=["text_a", "text_b"])
    if len(texted):
        from dialeval.stats.style import style_features

        section = style_of_votes(
            systems,
            texted["model_a"],
            texted["model_b"],
            texted["winner"],
            np.array([style_features(t) for t in texted["text_a"]]),
            np.array([style_features(t) for t in texted["text_b"]]),
            ci=ci,
        )
        if section is not None:
            out["style_control"] = section
    overall = {s["name"]: s["score"] for s in systems}
    boots = min(n_boot, 200)  # per segment: intervals for the flag, not for publication
    categorised = votes.dropna(subset=["category"])
    if categorised["category"].nunique() > 1:
        out["by_category"] = segment_boards(categorised, "category", overall, n_boot=boots, ci=ci, seed=seed)
    platform = {a.id: a.platform for a in dataset.annotators}
    by_platform = votes.assign(platform=votes["annotator"].map(platform))
    if by_platform["platform"].nunique() > 1:
        out["by_platform"] = segment_boards(
            by_platform.dropna(subset=["platform"]), "platform", overall, n_boot=boots, ci=ci, seed=seed
        )
    return out


def _has_items(dataset: Dataset) -> bool:
    """Whether some battle names the item it judges (meta ``item``: formats/arena.py, item_key)."""
    if isinstance(dataset.judgments, JudgmentColumns):
        frame = dataset.judgments.frame
        return "meta.item" in frame and bool(frame["meta.item"].notna().any())
    return any((j.meta or {}).get("item") for j in dataset.judgments)


def analyze_arena(
    dataset: Dataset,
    n_boot: int = 1000,
    ci: float = 0.95,
    seed: int = 0,
    exclude_annotators: list[str] | None = None,
) -> dict[str, Any]:
    """The arena report dict: systems (leaderboard), win_rates, battle_counts, outcomes, judges."""
    filtered = filtered_annotator_ids(dataset, exclude_annotators)
    crowd_ids = {a.id for a in dataset.annotators if not is_judge_annotator(a) and a.id not in filtered}
    known = {a.id for a in dataset.annotators}
    if isinstance(dataset.judgments, JudgmentColumns):
        crowd_ids |= set(dataset.judgments.frame["annotator"].unique()) - known
    else:
        crowd_ids |= {j.annotator_id for j in dataset.judgments if j.annotator_id not in known}
    votes = battle_frame(dataset, crowd_ids)
    report: dict[str, Any] = {"method": "arena", "ties": TIES_NOTE, "systems": []}
    anonymous = votes["anonymous"].astype(bool)
    named = votes[~anonymous]
    votes = _rows(votes, anonymous)
    if len(named):
        report["non_anonymous"] = {
            "votes": int(len(named)),
            "note": "votes cast after a bot named itself: recorded, left out of the leaderboard",
        }
    if votes.empty:
        return report
    # annotator screening (analysis/annotators.py): prompts asked too often capped, flagged voters
    # left out when the study says so; the annotator models below see every crowd vote
    screen = annotator_options(dataset.meta.get("config"))
    if votes["prompt"].notna().any():
        keep, report["prompts"] = cap_prompts(list(votes["prompt"]), screen["prompt_cap"], screen["near_duplicate"])
        votes = votes[keep]
    crowd_votes = votes
    excluded_voters = flagged(vote_frame(votes, "model_a", "model_b"), screen) if screen["exclude_flagged"] else []
    if excluded_voters:
        votes = votes[~votes["annotator"].astype(str).isin(set(excluded_voters))]
        if votes.empty:
            return report
    # The annotator models (Crowd-BT, the voter screen, Dawid-Skene and MACE: half of a million
    # votes' analysis) need only the crowd's votes: they run in a second thread while this one fits
    # the leaderboard (numpy's large array operations and its random draws leave the GIL). The same
    # functions on the same data in the same order within each thread: the same numbers. The thread
    # gets its own frame of the columns it reads (pandas frames are not for two threads at once).
    # BLAS's thread count is the process's: one thread while both run (their fits' own one_blas_thread
    # then set and restore 1, in whatever order the two threads interleave), restored after.
    with one_blas_thread():  # type: ignore[no-untyped-call]
        model = _Beside(
            _annotator_model, dataset, crowd_votes[MODEL_COLUMNS].copy(), screen, excluded_voters, n_boot, ci, seed
        )
        try:
            return _ranked(report, dataset, votes, crowd_votes, crowd_ids, model, n_boot, ci, seed)
        finally:
            model.wait()  # no thread left behind, should this one fail


class _Beside:
    """`fn(*args)` computed in a second thread; `result()` waits for it and returns its value or
    raises its error."""

    def __init__(self, fn: Any, *args: Any) -> None:
        import threading

        self._value: Any = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._value = fn(*args)
            except BaseException as error:  # noqa: BLE001 - raised in the caller's thread by result()
                self._error = error

        self._thread = threading.Thread(target=run, name="dialeval-annotator-model", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> Any:
        self.wait()
        if self._error is not None:
            raise self._error
        return self._value


def _ranked(
    report: dict[str, Any],
    dataset: Dataset,
    votes: pd.DataFrame,
    crowd_votes: pd.DataFrame,
    crowd_ids: set[str],
    model: _Beside,
    n_boot: int,
    ci: float,
    seed: int,
) -> dict[str, Any]:
    """The rest of analyze_arena: the leaderboard and its sections; `model`: the annotator_model
    section, computed beside."""
    outcomes = Counter(votes["winner"])
    options = ranking_options(dataset.meta.get("config"))
    tie_model = options["ties"]
    all_names, all_wins, all_ties = aggregate_votes(votes, "model_a", "model_b", "winner")
    ranked = votes[~votes["winner"].astype(str).str.startswith("tie")] if tie_model == "ignore" else votes
    board = bradley_terry(ranked, "model_a", "model_b", "winner", n_boot=n_boot, ci=ci, seed=seed)
    if ranked is votes:  # ties half: the counts of every vote, aggregated once
        names, wins, ties = all_names, all_wins, all_ties
    else:
        names, wins, ties = aggregate_votes(ranked, "model_a", "model_b", "winner")
    theta = fit_bt(wins, ties)
    _, half = sandwich_intervals(wins, ties, theta, ci=ci)
    sand = pd.DataFrame({"sandwich_low": to_elo(theta - half), "sandwich_high": to_elo(theta + half)}, index=names)
    if tie_model in ("davidson", "rao-kupper"):
        # the tie model's own ratings; its intervals are Wald intervals of the fit (stats/ties.py)
        fitted = tie_model_board(names, wins, ties, tie_model, ci, n_boot, seed)
        own = pd.DataFrame(
            {
                "rating": fitted["rating"],
                "ci_low": fitted["ci_low"],
                "ci_high": fitted["ci_high"],
                "rank": fitted["rank"],
                "rank_ci": [(int(a), int(b)) for a, b in zip(fitted["rank_lo"], fitted["rank_hi"])],
            },
            index=names,
        )
        board = board.drop(columns=list(own.columns)).join(own, on="name")
        board = board.sort_values(["rating", "name"], ascending=[False, True]).reset_index(drop=True)
        sand["sandwich_low"], sand["sandwich_high"] = fitted["ci_low"], fitted["ci_high"]
    sand["rank_sandwich"] = ci_rank(sand["sandwich_low"], sand["sandwich_high"])
    board = board.join(sand, on="name")
    board["tier"] = tiers(list(board["rating"]), list(board["ci_low"]), list(board["ci_high"]))
    board["provisional"] = provisional(list(board["n"]), list(board["ci_low"]), list(board["ci_high"]), options)
    order = list(board["name"])
    battles, rate = pairwise_tables(all_wins, all_ties)
    systems = []
    for row in board.itertuples(index=False):
        systems.append(
            {
                "name": row.name,
                "n": int(row.n),
                "score": round(float(row.rating), 2),
                "ci_low": round(float(row.ci_low), 2),
                "ci_high": round(float(row.ci_high), 2),
                "sandwich_low": round(float(row.sandwich_low), 2),
                "sandwich_high": round(float(row.sandwich_high), 2),
                "rank": int(row.rank),
                "rank_interval": list(row.rank_ci),
                "rank_sandwich": int(row.rank_sandwich),
                "wins": int(row.wins),
                "losses": int(row.losses),
                "ties": int(row.ties),
                "tier": int(row.tier),
                "provisional": bool(row.provisional),
            }
        )
    report.update(
        {
            "systems": systems,
            "win_rates": _matrix(all_names, rate, order, 3),
            "battle_counts": _matrix(all_names, battles, order, None),
            "outcomes": {k: int(outcomes.get(k, 0)) for k in ("model_a", "model_b", "tie", "tie (bothbad)")},
            "battles": int(len(votes)),
            "self_battles_dropped": int((votes["model_a"] == votes["model_b"]).sum()),
            "rating_scale": "Elo-like: 400 points = 10:1 odds, mean 1000",
            "intervals": {"level": ci, "bootstrap_rounds": n_boot, "seed": seed},
            "ties": TIE_NOTES[tie_model],
            "ranking": {**options, "rank": "1 + the number of models whose interval lies wholly above"},
        }
    )
    ties_report = tie_section(all_names, all_wins, all_ties, tie_model)
    if ties_report is not None:
        report["tie_model"] = ties_report
    if options["robustness"] and len(all_names) > 1:
        # on the votes the board ranks (ties half; Davidson and Rao–Kupper boards are audited on the
        # half-win fit, which orders the same boards in practice: say so in the section)
        report["robustness"] = robustness_audit(names, wins, ties, theta)
    turns = votes["turn"].dropna()
    if len(turns):
        report["turns"] = {str(int(k)): int(v) for k, v in sorted(Counter(turns.astype(int)).items())}
        report["turn_curve"] = turn_curve(votes)
    report.update(_style_and_segments(dataset, votes, systems, n_boot, ci, seed))
    judges = _judges(dataset, votes)
    if judges:
        report["judges"] = judges
    report["annotator_model"] = model.result()
    from ...judges.audit import people_section  # the same measures the judge audit sets judges against

    # only when the data can say something: answers' texts (length preference) or recognised items
    # (several people per item); else it would turn every vote into an object for nothing
    if crowd_votes["text_a"].notna().any() or _has_items(dataset):
        people = people_section(dataset, crowd_ids, n_boot=n_boot, seed=seed)
        if people:
            report["people"] = people
    return report


# the columns of the crowd's votes _annotator_model reads
MODEL_COLUMNS = ["annotator", "battle", "model_a", "model_b", "winner"]


def _annotator_model(
    dataset: Dataset,
    crowd: pd.DataFrame,
    options: dict[str, Any],
    excluded: list[str],
    n_boot: int,
    ci: float,
    seed: int,
) -> dict[str, Any]:
    """Crowd-BT and the voter screen on the crowd's votes; Dawid-Skene and MACE on the battles with
    the LLM judges' votes as one more annotator (the label: model_a, model_b or a kind of tie)."""
    # judges kept apart (their verdicts are added as labels); with --include-judges they are in `crowd`
    apart = [a.id for a in dataset.annotators if is_judge_annotator(a)]
    judge_ids = model_judges(dataset)
    both = pd.concat([crowd, battle_frame(dataset, set(apart))[crowd.columns]]) if apart else crowd
    both = _rows(both, both["model_a"] != both["model_b"])
    label = both["winner"].astype(str)  # the side chosen (a judge's position bias shows in its confusion)
    # a live vote without a battle id (None or NaN: not equal to itself) is an item of its own
    item = both["battle"].to_numpy(dtype=object, copy=True)
    lacking = np.flatnonzero(~((item == item) & (item != None)))  # noqa: E711 (per element)
    item[lacking] = [f"vote-{k}" for k in lacking]
    # the three columns the label models read, not a copy of every vote's frame
    columns = {"annotator": both["annotator"].to_numpy(), "label": label.to_numpy(), "item": item}
    items = pd.DataFrame(columns, index=both.index)
    return pairwise_model_section(
        vote_frame(crowd, "model_a", "model_b"),
        pairwise_labels(items, "item", "label"),
        options=options,
        judges=judge_ids,
        excluded=excluded,
        n_boot=n_boot,
        ci=ci,
        seed=seed,
    )
