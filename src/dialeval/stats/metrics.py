"""Word-overlap metrics compared with human scores in Ji et al. (2022), §7: BLEU-1/4, ROUGE-L, METEOR, GLEU.

BLEU, GLEU and METEOR come from nltk, ROUGE-L from rouge-score. Scores are corpus-level per system
(BLEU, GLEU: nltk's corpus functions; ROUGE-L, METEOR: mean of per-response scores).

METEOR needs WordNet 3.0. Nothing is downloaded: `wordnet_reader()` looks for a WordNet dict
directory in this order: $DIALEVAL_WORDNET_DIR, nltk's own `wordnet` corpus (if already installed in
nltk_data), the Debian package `wordnet-base` (/usr/share/wordnet). Debian's copy lacks the
`lexnames` file that nltk's reader opens first; a directory holding copies of its files plus
that file is then made under the user cache. Without any WordNet, METEOR raises WordNetUnavailable saying what to
install (`apt-get install --no-install-recommends wordnet-base`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

DEBIAN_WORDNET = Path("/usr/share/wordnet")
WORDNET_FILES = (
    "index.adj",
    "index.adv",
    "index.noun",
    "index.verb",
    "data.adj",
    "data.adv",
    "data.noun",
    "data.verb",
    "adj.exc",
    "adv.exc",
    "noun.exc",
    "verb.exc",
)
# The 45 lexicographer file names of WordNet 3.0 (numbered from 0), with their part-of-speech
# number (1 noun, 2 verb, 3 adjective, 4 adverb), as documented in lexnames(5WN).
_NOUN_FILES = [
    "act",
    "animal",
    "artifact",
    "attribute",
    "body",
    "cognition",
    "communication",
    "event",
    "feeling",
    "food",
    "group",
    "location",
    "motive",
    "object",
    "person",
    "phenomenon",
    "plant",
    "possession",
    "process",
    "quantity",
    "relation",
    "shape",
    "state",
    "substance",
    "time",
]
_VERB_FILES = [
    "body",
    "change",
    "cognition",
    "communication",
    "competition",
    "consumption",
    "contact",
    "creation",
    "emotion",
    "motion",
    "perception",
    "possession",
    "social",
    "stative",
    "weather",
]
_LEXNAMES = (
    ["adj.all", "adj.pert", "adv.all", "noun.Tops"]
    + ["noun." + n for n in _NOUN_FILES]
    + ["verb." + n for n in _VERB_FILES]
    + ["adj.ppl"]
)
_POS = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}


class WordNetUnavailable(RuntimeError):
    """No WordNet 3.0 database was found; METEOR cannot be computed."""


def tokenize(text: str) -> list[str]:
    """Lower-cased whitespace tokens with punctuation split off (nltk's wordpunct tokenizer)."""
    from nltk.tokenize import wordpunct_tokenize

    return wordpunct_tokenize(text.lower())


def _lexnames_text() -> str:
    return "".join(f"{i:02d}\t{name}\t{_POS[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES))


def _has_wordnet(d: Path) -> bool:
    return all((d / f).is_file() for f in WORDNET_FILES)


def _with_lexnames(d: Path) -> Path:
    """`d` itself when it has `lexnames`, else a cache directory of links to d's files plus lexnames."""
    if (d / "lexnames").is_file():
        return d
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    try:
        target = base / "dialeval" / "wordnet"
        target.mkdir(parents=True, exist_ok=True)
    except OSError:
        target = Path(tempfile.mkdtemp(prefix="dialeval-wordnet-"))
    # Copies (about 30 MB, once): nltk refuses symlinks that resolve outside the corpus root and
    # multiply-linked files.
    for f in d.iterdir():
        dest = target / f.name
        if dest.is_symlink() or (dest.exists() and dest.stat().st_nlink > 1):
            dest.unlink()
        if f.is_file() and (not dest.exists() or dest.stat().st_size != f.stat().st_size):
            tmp = dest.with_name(dest.name + ".part")
            shutil.copyfile(f, tmp)
            tmp.replace(dest)
    lex = target / "lexnames"
    if not lex.exists():
        lex.write_text(_lexnames_text(), encoding="utf-8")
    return target


def find_wordnet_dir() -> Path | None:
    """The first usable WordNet dict directory (see the module docstring), or None."""
    env = os.environ.get("DIALEVAL_WORDNET_DIR")
    candidates = [Path(env)] if env else []
    try:
        import nltk.data

        for root in nltk.data.path:
            candidates.append(Path(root) / "corpora" / "wordnet")
    except ImportError:  # pragma: no cover - nltk is a dependency
        pass
    candidates.append(DEBIAN_WORDNET)
    for d in candidates:
        if d.is_dir() and _has_wordnet(d):
            return d
    return None


@lru_cache(maxsize=1)
def wordnet_reader():
    """An nltk WordNetCorpusReader over a local WordNet 3.0; WordNetUnavailable when there is none."""
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    d = find_wordnet_dir()
    if d is None:
        raise WordNetUnavailable(
            "METEOR needs WordNet 3.0 and none was found. Install it offline with "
            "`apt-get install --no-install-recommends wordnet-base` (gives /usr/share/wordnet), or point "
            "DIALEVAL_WORDNET_DIR at a WordNet 3.0 dict directory, or install nltk's 'wordnet' corpus."
        )
    root = _with_lexnames(d)
    _authorize(root, d)

    class LocalWordNet(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet"):
            # nltk maps a non-default WordNet onto its downloaded 'wordnet' corpus, for the
            # multilingual (OMW) functions only; METEOR does not use them, and there is no download.
            return None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": not needed here
        return LocalWordNet(str(root), None)


def _authorize(*dirs: Path) -> None:
    """nltk >= 3.9 reads corpora only under its data roots (symlinks resolved); appending a directory
    to nltk.data.path is nltk's documented way to allow one. Added at the end: lookups of other
    resources are unchanged."""
    import nltk.data

    for d in dirs:
        text = str(Path(d).resolve())
        if text not in nltk.data.path:
            nltk.data.path.append(text)


def _pairs(hypotheses: Sequence[str], references: Sequence[str]) -> list[tuple[list[str], list[str]]]:
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("no responses to score")
    return [(tokenize(h), tokenize(r)) for h, r in zip(hypotheses, references)]


def bleu(hypotheses: Sequence[str], references: Sequence[str], n: int = 4) -> float:
    """Corpus BLEU-n (uniform weights over 1..n-grams, nltk smoothing method 1), in [0, 1]."""
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu

    pairs = _pairs(hypotheses, references)
    weights = tuple([1.0 / n] * n)
    return float(
        corpus_bleu(
            [[r] for _, r in pairs],
            [h for h, _ in pairs],
            weights=weights,
            smoothing_function=SmoothingFunction().method1,
        )
    )


def gleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Corpus GLEU (Wu et al. 2016; min of n-gram precision and recall, n = 1..4), in [0, 1]."""
    from nltk.translate.gleu_score import corpus_gleu

    pairs = _pairs(hypotheses, references)
    return float(corpus_gleu([[r] for _, r in pairs], [h for h, _ in pairs]))


def rouge_l(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Mean ROUGE-L F1 over responses (rouge-score, no stemming), in [0, 1]."""
    from rouge_score import rouge_scorer

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("no responses to score")
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    return float(np.mean([scorer.score(r, h)["rougeL"].fmeasure for h, r in zip(hypotheses, references)]))


def meteor(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Mean METEOR (nltk, WordNet synonyms) over responses, in [0, 1]. Raises WordNetUnavailable."""
    from nltk.translate.meteor_score import single_meteor_score

    wn = wordnet_reader()
    pairs = _pairs(hypotheses, references)
    return float(np.mean([single_meteor_score(r, h, wordnet=wn) for h, r in pairs]))


METRICS: dict[str, Callable[[Sequence[str], Sequence[str]], float]] = {
    "bleu1": lambda h, r: bleu(h, r, n=1),
    "bleu4": lambda h, r: bleu(h, r, n=4),
    "rouge_l": rouge_l,
    "meteor": meteor,
    "gleu": gleu,
}


def score_system(
    hypotheses: Sequence[str], references: Sequence[str], metrics: Sequence[str] = tuple(METRICS)
) -> dict[str, float]:
    """All requested metrics for one system's responses against the references (same order)."""
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; choose from {sorted(METRICS)}")
    return {m: METRICS[m](hypotheses, references) for m in metrics}


def metric_correlations(
    human_scores_by_system: Mapping[str, float],
    metric_scores_by_system: Mapping[str, Mapping[str, float]] | Mapping[str, float],
) -> dict[str, dict[str, float | int | None]]:
    """Pearson and Spearman r between human and metric scores over the systems both have (paper Table 5).

    `metric_scores_by_system` is {system: {metric: score}} (one result per metric) or {system: score}
    (one result under the key "metric"). Returns {metric: {"pearson", "spearman", "n"}}; r is None
    with fewer than 3 shared systems or constant scores.
    """
    by_system: dict[str, Mapping[str, float]] = {
        s: v if isinstance(v, Mapping) else {"metric": v} for s, v in metric_scores_by_system.items()
    }
    systems = [s for s in human_scores_by_system if s in by_system]
    metric_names = list(dict.fromkeys(m for s in systems for m in by_system[s]))
    # imported here: a report imports this module whether or not it has references to score, and
    # scipy.stats takes ~0.5 s to import
    from scipy import stats

    out: dict[str, dict[str, float | int | None]] = {}
    for m in metric_names:
        shared = [s for s in systems if m in by_system[s]]
        x = np.array([human_scores_by_system[s] for s in shared], dtype=float)
        y = np.array([by_system[s][m] for s in shared], dtype=float)
        if len(shared) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
            out[m] = {"pearson": None, "spearman": None, "n": len(shared)}
        else:
            out[m] = {
                "pearson": float(stats.pearsonr(x, y).statistic),
                "spearman": float(stats.spearmanr(x, y).statistic),
                "n": len(shared),
            }
    return out
