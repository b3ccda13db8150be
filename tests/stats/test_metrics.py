"""Word-overlap metrics (Ji et al. 2022, §7) and their correlation with human scores."""

from __future__ import annotations

import pytest

from dialeval.stats import metrics
from tests.conftest import in_ci

HYP = ["the cat sat on the mat", "i like dogs a lot", "hello how are you"]
REF = ["a cat was sitting on the mat", "i love dogs very much", "hi how are you doing"]


def test_identical_responses_score_one():
    for name in ("bleu1", "bleu4", "rouge_l", "gleu"):
        assert metrics.METRICS[name](REF, REF) == pytest.approx(1.0)


def test_overlap_orders_systems():
    unrelated = ["purple elephants dance quietly", "seven rivers under stone", "zebra quantum banana"]
    good = metrics.score_system(HYP, REF, ["bleu1", "bleu4", "rouge_l", "gleu"])
    bad = metrics.score_system(unrelated, REF, ["bleu1", "bleu4", "rouge_l", "gleu"])
    for name in good:
        assert 0 <= bad[name] < good[name] <= 1
    assert metrics.bleu(HYP, REF, n=1) > metrics.bleu(HYP, REF, n=4)


def test_bad_input():
    with pytest.raises(ValueError, match="2 hypotheses but 3 references"):
        metrics.bleu(HYP[:2], REF)
    with pytest.raises(ValueError, match="unknown metric"):
        metrics.score_system(HYP, REF, ["bleurt"])


def test_meteor_with_local_wordnet_or_clear_error(monkeypatch):
    if metrics.find_wordnet_dir() is None:
        metrics.wordnet_reader.cache_clear()
        with pytest.raises(metrics.WordNetUnavailable, match="apt-get install --no-install-recommends wordnet-base"):
            metrics.meteor(HYP, REF)
        if in_ci():  # scripts/setup.sh installs wordnet-base
            pytest.fail("no WordNet 3.0 in CI")
        pytest.skip("no WordNet 3.0 on this machine (apt-get install wordnet-base)")
    same = metrics.meteor(REF, REF)
    close = metrics.meteor(HYP, REF)
    assert same > 0.99 and 0 < close < same
    # WordNet synonyms count: "ill" matches "sick" only through WordNet
    ref = ["i was sick all week"]
    assert metrics.meteor(["i was ill all week"], ref) > 0.99
    assert metrics.meteor(["i was red all week"], ref) == pytest.approx(0.75)


def test_missing_wordnet_raises_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(metrics, "find_wordnet_dir", lambda: None)
    metrics.wordnet_reader.cache_clear()
    try:
        with pytest.raises(metrics.WordNetUnavailable, match="wordnet-base"):
            metrics.meteor(HYP, REF)
    finally:
        metrics.wordnet_reader.cache_clear()


def test_lexnames_cover_wordnet_30():
    lines = metrics._lexnames_text().splitlines()
    assert len(lines) == 45
    assert lines[0].split("\t") == ["00", "adj.all", "3"] and lines[44].split("\t") == ["44", "adj.ppl", "3"]
    assert lines[3].split("\t") == ["03", "noun.Tops", "1"] and lines[29].split("\t") == ["29", "verb.body", "2"]


def test_metric_correlations():
    human = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "only_human": 9.0}
    scores = {"a": {"x": 1, "y": 4}, "b": {"x": 2, "y": 3}, "c": {"x": 2.5, "y": 2}, "d": {"x": 5, "y": 1}}
    out = metrics.metric_correlations(human, scores)
    assert out["x"]["spearman"] == pytest.approx(1.0) and 0.9 < out["x"]["pearson"] < 1.0
    assert out["y"]["pearson"] == pytest.approx(-1.0) and out["y"]["n"] == 4
    flat = metrics.metric_correlations(human, {"a": 1, "b": 2})
    assert flat == {"metric": {"pearson": None, "spearman": None, "n": 2}}
