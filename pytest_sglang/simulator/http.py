"""The simulator's HTTP primitives: a request, a reply, and the refusals an endpoint raises.

Shared by the endpoints (:mod:`.server`) and the asyncio server that carries them
(:mod:`.aio`), in a module of their own so neither of those imports the other for them.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass
from email.message import Message
from typing import Any, Protocol, Union

from pytest_sglang.simulator.engine import Plan, Wait

__all__ = ["BadRequest", "Frames", "Handler", "InvalidBody", "Rejected", "Reply", "Request", "json_reply"]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: Message
    body: bytes

    def json_object(self) -> dict[str, Any]:
        try:
            data = json.loads(self.body or b"null")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidBody(f"request body is not valid JSON: {exc}", self, exc) from None
        except (RecursionError, ValueError):
            # Nested too deep, or an integer of thousands of digits: FastAPI turns any other
            # failure to parse a body into HTTPException(400, "There was an error parsing the
            # body"), which SGLang's handler answers in its ErrorResponse shape.
            raise Rejected(json_reply(BODY_PARSE_ERROR, 400)) from None
        if not isinstance(data, dict):
            raise InvalidBody("request body must be a JSON object", self, data=data)
        return data


BODY_PARSE_ERROR = {"object": "error", "message": "There was an error parsing the body", "type": "400", "param": None, "code": 400}

# Server-sent event frames, sent with chunked transfer encoding as they are produced, and
# between them what producing the next one waits for.
Frames = Generator[Union[bytes, Wait], None, None]


@dataclass
class Reply:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    stream: Frames | None = None
    # An answer that needs the engine first: the server runs this plan, then sends its reply.
    pending: Plan[Reply] | None = None


def json_reply(data: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(data).encode())


class Handler(Protocol):
    """What a server needs of the simulator behind it (:class:`~pytest_sglang.simulator.server.Simulator`)."""

    def handle(self, request: Request) -> Reply: ...


class Rejected(Exception):
    """A reply decided before the endpoint runs (401, 404, 405)."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.status)
        self.reply = reply


class BadRequest(Exception):
    """A request an endpoint refuses; rendered in the error shape of the endpoint's API."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class InvalidBody(BadRequest):
    """A body that is not a JSON object. From 0.5.23 FastAPI's request validation refuses it
    before the endpoint runs, so it is answered in that handler's shape, whatever the route."""

    def __init__(
        self,
        message: str,
        request: Request,
        decode_error: ValueError | None = None,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.request = request
        self.decode_error = decode_error
        self.data = data
