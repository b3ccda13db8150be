"""The HTML of the report's `judge_audit` section: the verdict sentence first, then agreement per
question (people with each other beside each judge with people), the bias checks and per-bot
agreement, each table tagged with the report.json path it shows."""

from __future__ import annotations

from html import escape
from typing import Any

from .render import fmt, html_table


def _ci(stats: dict[str, Any] | None, field: str) -> str:
    if not stats or stats.get(field) is None:
        return "–"
    ci = stats.get(f"{field}_ci") or stats.get("ci")
    text = fmt(stats[field], field, 2)
    return f"{text} [{fmt(ci[0], field, 2)}, {fmt(ci[1], field, 2)}]" if ci else text


def _share(test: dict[str, Any] | None) -> str:
    if not test or test.get("share") is None:
        return "–"
    ci = test.get("ci") or [None, None]
    return f"{test['share']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}] of {test['n']}"


def _p(value: Any) -> str:
    return fmt(value, "p_value")


def judge_audit_html(audit: dict[str, Any]) -> str:
    parts = [
        f'<p class="answer" data-key="judge_audit.verdict"><strong>{escape(audit.get("verdict", ""))}</strong></p>'
    ]
    parts.append(
        f'<p class="note">Compared on {escape(str(audit.get("compared_on")))}; intervals: '
        f"{escape(str(audit.get('intervals')))}. The judges' judgments are not in the statistics above "
        "(dialeval report --include-judges counts their verdicts).</p>"
    )
    rows = []
    for question, entry in (audit.get("questions") or {}).items():
        variants = list(entry.get("human_human") or {})
        for variant in variants:
            who = [("people with each other", entry["human_human"][variant])]
            who += [(f"{j} with people", v[variant]) for j, v in (entry.get("judges") or {}).items()]
            for name, stats in who:
                rows.append(
                    [
                        question,
                        variant if len(variants) > 1 else "all",
                        name,
                        fmt(stats.get("items"), "items"),
                        fmt(stats.get("pairs"), "pairs"),
                        _ci(stats, "agreement"),
                        _ci(stats, "kappa"),
                    ]
                )
    parts.append("<h4>Agreement per question</h4>")
    parts.append(
        html_table(
            "judge_audit.questions",
            ["question", "answers", "who", "items", "pairs", "raw agreement [95% CI]", "Cohen's κ [95% CI]"],
            rows,
            [False, False, False, True, True, False, False],
        )
    )
    bias_rows = []
    for judge, info in (audit.get("bias") or {}).items():
        position = info.get("position_bias") or {}
        length = info.get("length_preference") or {}
        consistent = position.get("consistent_pairs") or {}
        bias_rows.append(
            [
                judge,
                str(position.get("basis", "–")),
                _share(position.get("first_share")),
                _p((position.get("first_share") or {}).get("p_value")),
                _share(position.get("people_first_share")),
                "–" if consistent.get("share") is None else f"{consistent['share']:.2f} of {consistent['n']}",
                _share(length.get("judge_longer_share")),
                _share(length.get("people_longer_share")),
                _p(length.get("p_value_judge_vs_people")),
                str((info.get("failed_answers") or {}).get("n", 0)),
            ]
        )
    if bias_rows:
        parts.append("<h4>Position and length bias</h4>")
        if audit.get("position_note"):
            parts.append(f'<p class="note">{escape(audit["position_note"])}</p>')
        parts.append(
            html_table(
                "judge_audit.bias",
                [
                    "judge",
                    "basis",
                    "judge: chose first shown",
                    "p (vs 0.5)",
                    "people: chose first shown",
                    "same verdict both orders",
                    "judge: chose longer",
                    "people: chose longer",
                    "p (judge vs people)",
                    "failed answers",
                ],
                bias_rows,
            )
        )
    bot_rows = []
    for question, entry in (audit.get("questions") or {}).items():
        for judge, v in (entry.get("judges") or {}).items():
            for bot, stats in (v.get("per_bot") or {}).items():
                bot_rows.append([judge, question, bot, fmt(stats["agreement"], "agreement", 2), str(stats["pairs"])])
    if bot_rows:
        parts.append("<h4>Judge–human agreement per bot</h4>")
        parts.append(
            html_table(
                "judge_audit.questions[*].judges[*].per_bot",
                ["judge", "question", "bot", "raw agreement", "pairs"],
                bot_rows,
                [False, False, False, True, True],
            )
        )
    parts += _corrected_html(audit)
    return "".join(parts)


def _interval(value: Any, ci: list | None, digits: int) -> str:
    if value is None:
        return "–"
    text = f"{value:.{digits}f}"
    return f"{text} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci and None not in ci else text


def _corrected_html(audit: dict[str, Any]) -> list[str]:
    """Judge-corrected intervals (PPI++) beside people-only ones, per judge and question."""
    parts = []
    for question, entry in (audit.get("questions") or {}).items():
        for judge, v in (entry.get("judges") or {}).items():
            c = v.get("judge_corrected")
            if not c:
                continue
            key = f"judge_audit.questions.{question}.judges.{judge}.judge_corrected"
            parts.append(f"<h4>Judge-corrected intervals: {escape(judge)}, {escape(question)}</h4>")
            if not c.get("systems"):
                parts.append(f'<p class="note">{escape(str(c.get("note", "no estimate")))}</p>')
                continue
            parts.append(
                f'<p class="note">Prediction-powered (PPI++) estimates from the {c["labelled"]} items people '
                f"judged and the judge's labels on {c['judge_only']} more; λ = {c['lambda_bt']} weighs the "
                "judge (0: people only). Valid whatever the judge's quality; narrower when it agrees with "
                "people. Win rate: against the field, ties ½; Bradley–Terry on the Elo-like scale (mean 1000).</p>"
            )
            rows = [
                [
                    s["name"],
                    _interval(s["win_rate_people"], s["win_rate_people_ci"], 2),
                    _interval(s["win_rate_corrected"], s["win_rate_corrected_ci"], 2),
                    _interval(s["bt_people"], s["bt_people_ci"], 0),
                    _interval(s["bt_corrected"], s["bt_corrected_ci"], 0),
                    "–".join(str(r) for r in s["rank_set_corrected"]),
                ]
                for s in c["systems"]
            ]
            parts.append(
                html_table(
                    key,
                    [
                        "system",
                        "win rate, people only [95% CI]",
                        "win rate, judge-corrected [95% CI]",
                        "Bradley–Terry, people only",
                        "Bradley–Terry, judge-corrected",
                        "rank set",
                    ],
                    rows,
                )
            )
    return parts
