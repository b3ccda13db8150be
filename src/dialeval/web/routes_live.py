"""Live chat's stream: a bot's reply as Server-Sent Events, each chunk as soon as the bot wrote it.

The engine (generations, the send/reply/watch actions) is the protocol framework's
(protocols/live.py); this route only turns its ``event_stream`` into an HTTP stream. Pages that
cannot read one fall back to long-polling the ``watch`` action (routes_annotator.act).
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from .deps import LiveChat, OwnedAssignment, Served, Session
from .limits import CursorParam, header_id

router = APIRouter()


@router.get("/s/{slug}/a/{assignment_id}/events")
async def events(
    request: Request,
    served: Served,
    session: Session,
    protocol: LiveChat,
    assignment: OwnedAssignment,
    generation: str = "",
    cursor: CursorParam = 0,
):
    """A live reply as Server-Sent Events: each chunk is sent as soon as the bot produced it."""
    annotator = session.annotator
    last = header_id(request.headers.get("last-event-id"))
    start = last if last is not None else max(0, cursor)

    async def stream():
        yield "retry: 1500\n\n"
        async for event, position in protocol.event_stream(annotator, assignment, generation, start):
            if event is None:
                yield ": keep-alive\n\n"
            else:
                yield f"id: {position}\ndata: {json.dumps(event)}\n\n"

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
