"""Live replies as Server-Sent Events (GET /s/<slug>/a/<id>/events): chunks arrive one by one while the
bot writes, the stream ends with "done", a reconnect resumes after the last event it saw, and nobody
else can read an annotator's stream. Real app and real OpenAI-compatible server, both on loopback."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.bots.fake_openai_server import start_fake_openai
from tests.conftest import in_ci

from .test_live_support import LiveClient, LiveServer, make_live_study


def read_events(client: LiveClient, generation: str, headers: dict | None = None) -> list[tuple[float, dict, str]]:
    """(arrival time, event, id) for each event of the stream, until it ends."""
    url = client.url(f"a/{client.assignment_id}/events")
    out = []
    with client.http.stream(
        "GET", url, params={"generation": generation, "cursor": 0}, headers=headers or {}, timeout=30
    ) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream"), r.status_code
        event_id = ""
        for line in r.iter_lines():
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("data: "):
                out.append((time.monotonic(), json.loads(line[6:]), event_id))
    return out


def test_reply_streams_word_by_word_and_ends_with_done(tmp_path):
    with start_fake_openai(word_delay=0.08, reply="one two three four five six") as url:
        bot = {"name": "alpha", "type": "openai", "options": {"base_url": str(url), "model": "m", "retries": 0}}
        folder = make_live_study(tmp_path / "sm", "single-model", [bot], name="sm-events")
        with LiveServer([folder]) as server:
            client = LiveClient(server)
            try:
                client.enter()
                client.task()
                started = client.act("reply").json()
                events = read_events(client, started["generation"])
                chunks = [(t, e, i) for t, e, i in events if e["event"] == "chunk"]
                full = "one two three four five six"
                assert "".join(e["text"] for _, e, _ in chunks) == full
                # sent as written, not in one block at the end: one event per word the bot wrote 80 ms
                # apart, except that words reaching the server together (a loaded machine) may share one
                assert len(chunks) >= 3
                assert chunks[-1][0] - chunks[0][0] > 0.3
                assert events[-1][1]["event"] == "done"
                # a reconnect (EventSource sends Last-Event-ID) resumes right after that event: the
                # event that brought "three", then exactly the rest of the text
                so_far, resume_id = "", None
                for _, e, i in chunks:
                    so_far += e["text"]
                    if "three" in so_far:
                        resume_id = i
                        break
                assert resume_id is not None and so_far != full
                again = read_events(client, started["generation"], headers={"Last-Event-ID": resume_id})
                texts = [e["text"] for _, e, _ in again if e["event"] == "chunk"]
                assert "".join(texts) == full[len(so_far) :] and texts
                # another annotator cannot read this stream
                other = LiveClient(server)
                try:
                    other.enter()
                    r = other.http.get(
                        client.url(f"a/{client.assignment_id}/events"), params={"generation": started["generation"]}
                    )
                    assert r.status_code == 403
                finally:
                    other.close()
                assert httpx.get(server.url + "/healthz").status_code == 200
            finally:
                client.close()


@pytest.mark.llm
def test_local_model_reply_streams_token_by_token(tmp_path):
    """The bundled SmolLM2 bot's reply reaches the page's event stream in several pieces."""
    from dialeval.bots import local_llm

    if local_llm.missing_requirements():
        message = f"extra 'llm' not installed: {local_llm.missing_requirements()}"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    bot = {"name": "small", "type": "local-llm", "options": {"max_new_tokens": 16, "seed": 2}}
    folder = make_live_study(tmp_path / "sm", "single-model", [bot], name="sm-llm")
    with LiveServer([folder]) as server:
        client = LiveClient(server)
        try:
            client.enter()
            client.task()
            started = client.act("reply").json()
            events = read_events(client, started["generation"])
            chunks = [e["text"] for _, e, _ in events if e["event"] == "chunk"]
            assert len(chunks) >= 3, chunks
            assert events[-1][1]["event"] == "done"
            conv = server.store.get_conversation(server.study_id, f"live-{client.assignment_id}")
            assert conv.turns[-1].text == "".join(chunks).strip()
        finally:
            client.close()
