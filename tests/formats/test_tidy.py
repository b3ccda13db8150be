from __future__ import annotations

import json
from datetime import UTC, datetime

import pandas as pd
import pytest

from dialeval.errors import DialevalError
from dialeval.formats import load, reader, writer
from dialeval.formats.tidy import BASE_COLUMNS, export_judgments, judgments_frame
from dialeval.records import Annotator, Conversation, Dataset, Judgment, Turn, Unit


def _acute() -> Dataset:
    convs = [
        Conversation("c1", ["alpha"], [Turn("bot", "hi", bot="alpha")]),
        Conversation("c2", ["beta"], [Turn("bot", "yo", bot="beta")]),
    ]
    t0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    return Dataset(
        method="acute",
        conversations=convs,
        annotators=[
            Annotator("w1", "prolific"),
            Annotator("w2", "mturk", meta={"qc_status": "failed", "filter_reasons": ["all_caps", "greeting_first"]}),
        ],
        units=[Unit("u1", "acute-pair", ["c1", "c2"], {"speakers_to_eval": ["alpha", "beta"]})],
        judgments=[
            Judgment(
                "w1",
                "u1",
                "engaging",
                {"winner": "c1", "loser": "c2"},
                justification="more fun",
                elapsed_s=31.5,
                created_at=t0,
                shown_order=["c2", "c1"],
            ),
            Judgment(
                "w2",
                "u1",
                "engaging",
                {"winner": "c2", "loser": "c1"},
                justification="",
                created_at=t0.replace(hour=13),
                shown_order=["c1", "c2"],
                meta={"attempt": 2},
            ),
        ],
    )


def test_frame_columns_and_values():
    frame = judgments_frame(_acute())
    assert list(frame.columns) == BASE_COLUMNS + ["value.winner", "value.loser"]
    assert frame["judgment_index"].tolist() == [0, 1]
    assert frame["bots"].tolist() == ["alpha,beta", "alpha,beta"]
    assert frame["annotator_platform"].tolist() == ["prolific", "mturk"]
    assert json.loads(frame.loc[0, "value"]) == {"winner": "c1", "loser": "c2"}
    assert frame["value.winner"].tolist() == ["c1", "c2"]
    assert json.loads(frame.loc[0, "shown_order"]) == ["c2", "c1"]
    assert frame["annotator_flagged"].tolist() == [False, True]
    assert frame.loc[1, "annotator_qc_status"] == "failed"
    assert frame.loc[1, "annotator_flag_reason"] == "all_caps;greeting_first"
    assert json.loads(frame.loc[1, "meta"]) == {"attempt": 2} and frame.loc[0, "meta"] is None
    assert frame.loc[0, "elapsed_s"] == 31.5 and pd.isna(frame.loc[1, "elapsed_s"])
    assert str(frame["created_at"].dt.tz) == "UTC"


def test_mixed_value_kinds_and_other_methods():
    ds = Dataset(
        method="spot-the-bot",
        conversations=[Conversation("s1", ["a", "b"], [])],
        units=[Unit("seg1", "segment", ["s1"])],
        judgments=[
            Judgment(
                "w",
                "seg1",
                "segment",
                {
                    "segment_exchanges": 2,
                    "entity0": "bot",
                    "fluency": 0,
                    "decision_turn0": None,
                    "nested": {"x": 1},
                },
            ),
            Judgment(
                "w",
                "seg1",
                "segment",
                {"segment_exchanges": 3, "entity0": "human", "fluency": "tie", "decision_turn0": 2},
            ),
            Judgment("w", None, "overall", 4, conversation_id="s1"),
        ],
    )
    frame = judgments_frame(ds)
    assert "value.nested" not in frame.columns
    assert frame["bots"].tolist() == ["a,b", "a,b", "a,b"]
    assert frame["value.fluency"].tolist()[:2] == ["0", "tie"]
    assert str(frame["value.segment_exchanges"].dtype) == "Int64"
    assert frame["value"].tolist()[2] == "4" and frame["annotator_platform"].isna().all()


def test_empty_dataset_has_columns():
    frame = judgments_frame(Dataset(method="acute"))
    assert list(frame.columns) == BASE_COLUMNS and len(frame) == 0


@pytest.mark.parametrize("name, fmt", [("j.csv", None), ("j.jsonl", None), ("j.parquet", None), ("j.txt", "csv")])
def test_export_round_trips_through_pandas(tmp_path, name, fmt):
    ds = _acute()
    path = export_judgments(ds, tmp_path / name, format=fmt)
    kind = fmt or path.suffix.lstrip(".")
    if kind == "csv":
        back = pd.read_csv(path, keep_default_na=True)
    elif kind == "jsonl":
        back = pd.read_json(path, lines=True)
    else:
        back = pd.read_parquet(path)
    assert len(back) == 2
    assert back["judgment_index"].tolist() == [0, 1]
    assert back["annotator_id"].tolist() == ["w1", "w2"]
    assert [json.loads(v) for v in back["value"]] == [j.value for j in ds.judgments]
    assert [json.loads(v) for v in back["shown_order"]] == [j.shown_order for j in ds.judgments]
    assert back["value.winner"].tolist() == ["c1", "c2"]
    assert back["annotator_flagged"].astype(bool).tolist() == [False, True]
    assert pd.to_datetime(back["created_at"], utc=True).tolist() == [pd.Timestamp(j.created_at) for j in ds.judgments]


def test_export_unknown_format(tmp_path):
    with pytest.raises(DialevalError, match="extension"):
        export_judgments(_acute(), tmp_path / "j.xlsx")
    with pytest.raises(DialevalError, match="unknown export format"):
        export_judgments(_acute(), tmp_path / "j.csv", format="xml")


def test_registry(tmp_path):
    from dialeval.formats.acute_pairings import read_acute_pairings

    assert reader("acute-pairings") is read_acute_pairings
    assert writer("judgments") is export_judgments
    with pytest.raises(DialevalError, match="known formats"):
        reader("nope")
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    ds = load("openai-messages", path, default_bot="x")
    assert ds.method == "conversations" and ds.conversations[0].bots == ["x"]
