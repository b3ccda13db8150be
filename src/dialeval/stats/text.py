"""Justification text: lengths and distinctive terms per chosen bot (Smith et al. 2022, Appendix D).

Input: DataFrame[bot, text] with one row per justification, `bot` being the bot the annotator
chose. This module imports nothing from dialeval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["justification_lengths", "top_tfidf_terms"]


def _clean(df: pd.DataFrame, bot: str, text: str) -> pd.DataFrame:
    d = df[[bot, text]].dropna()
    d = d[d[text].astype(str).str.strip() != ""]
    return d


def justification_lengths(df: pd.DataFrame, bot: str = "bot", text: str = "text") -> pd.DataFrame:
    """Mean and SD of words per justification by chosen bot: DataFrame[bot, n, mean_words, sd_words]."""
    d = _clean(df, bot, text)
    words = d[text].astype(str).str.split().str.len()
    g = words.groupby(d[bot])
    out = pd.DataFrame({"n": g.size(), "mean_words": g.mean(), "sd_words": g.std(ddof=1)})
    return out.reset_index().rename(columns={"index": "bot", bot: "bot"})


def top_tfidf_terms(
    df: pd.DataFrame, bot: str = "bot", text: str = "text", k: int = 10, max_df: float = 0.8
) -> dict[str, list[tuple[str, float]]]:
    """Top-k TF-IDF terms per chosen bot.

    Every justification is a document; the vectoriser (English stop words removed, terms in more
    than `max_df` of documents dropped) is fitted on all of them; a bot's term weight is the mean
    TF-IDF of the term over the justifications given when that bot was chosen.
    """
    d = _clean(df, bot, text)
    if d.empty:
        return {}
    from sklearn.feature_extraction.text import TfidfVectorizer  # ~0.3 s to import: only when there is text

    vec = TfidfVectorizer(stop_words="english", max_df=max_df)
    try:
        X = vec.fit_transform(d[text].astype(str))
    except ValueError:  # every term was a stop word or too frequent
        return {str(b): [] for b in d[bot].unique()}
    terms = np.asarray(vec.get_feature_names_out())
    out: dict[str, list[tuple[str, float]]] = {}
    labels = d[bot].to_numpy()
    for b in sorted(set(labels), key=str):
        w = np.asarray(X[labels == b].mean(axis=0)).ravel()
        top = np.argsort(-w, kind="stable")[:k]
        out[str(b)] = [(str(terms[i]), float(w[i])) for i in top if w[i] > 0]
    return out
