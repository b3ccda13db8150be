"""Human-human conversations for retrieval bots, the degraded QC bot, replay and seeding.

The default corpus is the Chit-Chat Challenge data set bundled by the `chitchat-dataset` package.
A user's own corpus is a JSONL file of {"turns": [str, ...]} (optional "id") or a plain text file
with one turn per line and conversations separated by blank lines.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass
from pathlib import Path

from dialeval.errors import ImportFormatError

BUNDLED = "chitchat"


@dataclass(frozen=True)
class CorpusConversation:
    id: str
    turns: tuple[str, ...]


_cache: dict[tuple[str, float], list[CorpusConversation]] = {}
_lock = threading.Lock()


def load_corpus(path: str | Path | None = None, max_conversations: int | None = None) -> list[CorpusConversation]:
    """The conversations of the bundled corpus (path None) or of a corpus file; cached per file.

    `max_conversations` keeps the first N in file order, so a given N always gives the same corpus.
    """
    if max_conversations is not None and max_conversations < 1:
        raise ValueError("max_conversations must be at least 1")
    key = _cache_key(path)
    with _lock:  # one load per file even when several bots start at once
        if key not in _cache:
            _cache[key] = _load_bundled() if path is None else _load_file(Path(path))
        conversations = _cache[key]
    return conversations if max_conversations is None else conversations[:max_conversations]


def _cache_key(path: str | Path | None) -> tuple[str, float]:
    if path is None:
        return (BUNDLED, 0.0)
    p = Path(path)
    if not p.is_file():
        raise ImportFormatError(str(p), "corpus file not found (give a JSONL or plain text file)")
    return (str(p.resolve()), p.stat().st_mtime)  # mtime: an edited file is read again


def _load_bundled() -> list[CorpusConversation]:
    try:
        import chitchat_dataset
    except ImportError as exc:  # it is a core dependency, but say how to fix a broken install
        raise ImportFormatError(
            "chitchat-dataset", "the bundled corpus is missing: pip install chitchat-dataset"
        ) from exc
    path = Path(chitchat_dataset.__file__).with_name("dataset.json")
    # Parsing its 40 MB of JSON takes ~0.9 s in every process that starts a bot (serve, simulate,
    # demo); the merged turns, pickled in the user's cache, load in ~0.05 s. The key is the file
    # itself (path, size, modification time), so a new release of the data set builds a new entry.
    from dialeval import cache

    try:
        stat = path.stat()
        cached = cache.cache_path("bundled-corpus", str(path), stat.st_size, stat.st_mtime_ns)
    except OSError:
        cached = None
    if cached is not None:
        rows = cache.load(cached)
        if isinstance(rows, list):
            return [CorpusConversation(conv_id, tuple(turns)) for conv_id, turns in rows]
    conversations = _parse_bundled(path)
    if cached is not None:
        cache.store(cached, [(c.id, c.turns) for c in conversations])
    return conversations


def _parse_bundled(path: Path) -> list[CorpusConversation]:
    with path.open(encoding="utf-8") as f:
        data = json.load(f)
    conversations = []
    for conv_id, conv in data.items():
        turns = _merge_senders(conv.get("messages", []))
        if len(turns) >= 2:
            conversations.append(CorpusConversation(conv_id, tuple(turns)))
    return conversations


def _merge_senders(messages: list[list[dict]]) -> list[str]:
    """One turn per change of speaker.

    Each entry of "messages" already groups one sender's consecutive messages; merging equal
    senders again guards against a group split in two.
    """
    turns: list[str] = []
    last_sender = object()
    for group in messages:
        texts = [m.get("text", "").strip() for m in group]
        text = " ".join(t for t in texts if t)
        if not text:
            continue
        sender = group[0].get("sender") if group else None
        if turns and sender == last_sender:
            turns[-1] += " " + text
        else:
            turns.append(text)
        last_sender = sender
    return turns


def _load_file(path: Path) -> list[CorpusConversation]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFormatError(str(path), f"not UTF-8 text ({exc.reason})") from exc
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if path.suffix.lower() == ".jsonl" or first.startswith("{"):
        conversations = _parse_jsonl(path, text)
    else:
        conversations = _parse_blocks(text, path.stem)
    if not conversations:
        raise ImportFormatError(str(path), "no conversation with at least 2 turns found")
    return conversations


def _parse_jsonl(path: Path, text: str) -> list[CorpusConversation]:
    conversations = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(str(path), f"not valid JSON ({exc.msg})", line=lineno) from exc
        turns = obj.get("turns") if isinstance(obj, dict) else None
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            raise ImportFormatError(
                str(path), 'expected an object like {"turns": ["hi", "hello"]}', line=lineno, field="turns"
            )
        turns = [t.strip() for t in turns if t.strip()]
        if len(turns) >= 2:
            conversations.append(CorpusConversation(str(obj.get("id", f"{path.stem}-{lineno}")), tuple(turns)))
    return conversations


def _parse_blocks(text: str, stem: str) -> list[CorpusConversation]:
    conversations: list[CorpusConversation] = []
    block: list[str] = []
    for line in [*text.splitlines(), ""]:  # the sentinel closes the last block
        if line.strip():
            block.append(line.strip())
        elif block:
            if len(block) >= 2:
                conversations.append(CorpusConversation(f"{stem}-{len(conversations)}", tuple(block)))
            block = []
    return conversations


def random_conversation(rng: random.Random, corpus: list[CorpusConversation] | None = None) -> CorpusConversation:
    corpus = load_corpus() if corpus is None else corpus
    return corpus[rng.randrange(len(corpus))]


def first_exchange(rng: random.Random, corpus: list[CorpusConversation] | None = None) -> tuple[str, list[str]]:
    """(conversation id, [turn0, turn1]) of a random conversation: the seed of a bot-bot chat."""
    conv = random_conversation(rng, corpus)
    return conv.id, list(conv.turns[:2])
