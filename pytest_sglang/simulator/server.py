"""An SGLang-compatible HTTP server that answers from a :class:`~pytest_sglang.simulator.profile.Profile`.

Standard library only, so it starts in milliseconds inside a test session or as
``python -m pytest_sglang.sim``. It speaks the endpoints, JSON shapes, auth rules and
streaming formats of the profile's SGLang version, and a deliberately simple performance
model: at most ``effective_max_running_requests_per_dp`` requests run at once, the rest
queue first-in first-out, so load above the cap shows as a rising time to first token.

Two servers carry it: an asyncio one (the default; one event loop keeps the model's timing
under hundreds of concurrent streams) and a thread-per-connection one. Both answer through
:class:`Simulator`; the performance model (:mod:`.engine`) only says what a request waits
for, and each server does the waiting its own way.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import selectors
import socket
import socketserver
import sys
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Generator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit

from pytest_sglang.base.errors import SGLangError, SpecError
from pytest_sglang.simulator.aio import INVALID_REQUEST, AsyncHTTPServer, Waker, new_event_loop, unsupported_method
from pytest_sglang.simulator.engine import (
    TTFT_BUCKETS,
    Engine,
    LoadSnapshot,
    Parallel,
    Plan,
    Prompt,
    Timeline,
    Totals,
    block,
    collect,
    run_blocking,
)
from pytest_sglang.simulator.http import BadRequest, Frames, InvalidBody, Rejected, Reply, Request, json_reply
from pytest_sglang.simulator.metrics import HttpCounts, metrics_text
from pytest_sglang.simulator.profile import Profile

__all__ = ["TTFT_BUCKETS", "Engine", "LoadSnapshot", "Prompt", "SimServer", "Timeline", "Totals", "metrics_text"]

MAX_NEW_TOKENS_LIMIT = 4096
# How many connections may wait to be accepted: a benchmark opens hundreds at once, and a
# short backlog turns the excess into SYN retransmits, seconds of latency the model never had.
LISTEN_BACKLOG = 1024
ServerKind = Literal["asyncio", "threaded"]
SERVER_KINDS: tuple[ServerKind, ...] = ("asyncio", "threaded")

FLUSH_CACHE_TEXT = (
    "Cache flushed.\nPlease check backend logs for more details. "
    "(When there are running or waiting requests, the operation will not be performed.)\n"
)
_SSE_DONE = b"data: [DONE]\n\n"


class SimServerError(SGLangError):
    """The simulator could not listen where it was asked to."""


def _validation_error(error: InvalidBody) -> Reply:
    """SGLang's RequestValidationError handler: a 400 with FastAPI's errors as the message,
    ``1 validation error:\n  {'type': ..., 'loc': ('body',), ...}`` and the route they came from."""
    request = error.request
    detail = _validation_detail(error)
    message = f"1 validation error:\n  {detail!r}\n\n    {request.method} {request.path} [{detail!r}]"
    body = {"object": "error", "message": message, "type": "Bad Request", "param": None, "code": 400}
    return json_reply(body, 400)


def _validation_detail(error: InvalidBody) -> dict[str, Any]:
    """The one error FastAPI reports for a body that is no JSON object."""
    given = error.request.body if error.decode_error is not None else error.data
    if error.request.path == "/generate":
        # GenerateReqInput is a dataclass, validated against the raw body when it does not decode.
        msg = "Input should be a dictionary or an instance of GenerateReqInput"
        context = {"class_name": "GenerateReqInput"}
        return {"type": "dataclass_type", "loc": ("body",), "msg": msg, "input": given, "ctx": context}
    if isinstance(error.decode_error, json.JSONDecodeError):
        # The OpenAI request models are pydantic models: FastAPI reports the JSON error itself.
        decode = error.decode_error
        msg, context = "JSON decode error", {"error": decode.msg}
        return {"type": "json_invalid", "loc": ("body", decode.pos), "msg": msg, "input": {}, "ctx": context}
    msg = "Input should be a valid dictionary or object to extract fields from"
    return {"type": "model_attributes_type", "loc": ("body",), "msg": msg, "input": given}


def _native_error(error: BadRequest) -> Reply:
    return json_reply({"error": {"message": error.message}}, error.status)


def _openai_error(error: BadRequest) -> Reply:
    kind = "NotFoundError" if error.status == 404 else "BadRequestError"
    body = {"object": "error", "message": error.message, "type": kind, "param": None, "code": error.status}
    return json_reply(body, error.status)


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


# ---- prompts ---------------------------------------------------------------------------


def _token_text(token_id: int) -> str:
    return f" tok{token_id}"


def _is_id_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(type(v) is int for v in value)


def _generate_prompts(body: dict[str, Any]) -> tuple[list[Prompt], bool]:
    """The prompts of a /generate body and whether it is a batch."""
    text, ids = body.get("text"), body.get("input_ids")
    if ids is not None:
        if _is_id_list(ids):
            return [Prompt.of_ids(ids)], False
        if isinstance(ids, list) and ids and all(_is_id_list(x) for x in ids):
            return [Prompt.of_ids(x) for x in ids], True
        raise BadRequest("input_ids must be a non-empty list of token ids, or a list of such lists")
    if isinstance(text, str):
        return [Prompt.of_text(text)], False
    if isinstance(text, list) and text and all(isinstance(t, str) for t in text):
        return [Prompt.of_text(t) for t in text], True
    raise BadRequest("Either text or input_ids should be provided.")


def _completion_prompts(prompt: Any) -> list[Prompt]:
    if isinstance(prompt, str):
        return [Prompt.of_text(prompt)]
    if _is_id_list(prompt):
        return [Prompt.of_ids(prompt)]
    if isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        return [Prompt.of_text(p) for p in prompt]
    raise BadRequest("prompt must be a string, a list of strings or a list of token ids")


def _chat_prompt(messages: Any) -> Prompt:
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise BadRequest("messages must be a non-empty list of message objects")
    return Prompt.of_text(" ".join(_message_text(m.get("content")) for m in messages))


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts; only text parts count as prompt text
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _max_new_tokens(value: Any, default: int, name: str) -> int:
    if value is None:
        return default
    if type(value) is not int or not 1 <= value <= MAX_NEW_TOKENS_LIMIT:
        raise BadRequest(f"{name} must be an integer from 1 to {MAX_NEW_TOKENS_LIMIT}, got {value!r}")
    return value


# ---- the endpoints ----------------------------------------------------------------------


class Route(NamedTuple):
    methods: frozenset[str]
    action: Callable[[Request], Reply]
    openai: bool = False  # errors in the OpenAI shape rather than SGLang's native one


_GET = frozenset({"GET"})
_POST = frozenset({"POST"})


class Simulator:
    """The HTTP-independent part: routing, auth, and every endpoint's reply."""

    def __init__(self, profile: Profile, ready_after: float) -> None:
        self.profile = profile
        self.served_model = profile.model.served_model_name or profile.model.model_path
        self.engine = Engine(profile.performance, profile.runtime.effective_max_running_requests_per_dp)
        self._ready_after = ready_after
        self._started = time.monotonic()
        self.routes = self._build_routes()
        self.http = HttpCounts()

    def mark_started(self) -> None:
        self._started = time.monotonic()

    @property
    def ready(self) -> bool:
        """Whether ``/health`` answers 200 now (not 503, as while warming up)."""
        return time.monotonic() - self._started >= self._ready_after

    def handle(self, request: Request) -> Reply:
        """The reply to one request. A streamed or pending reply is still running when this
        returns; the route counts as active until it has finished."""
        if request.path not in self.routes:
            return self._answer(request)
        key = (request.path, request.method)
        self.http.started(key)
        reply = self._answer(request)
        if reply.stream is not None:
            reply.stream = self._counted(reply.stream, key)
        elif reply.pending is not None:
            reply.pending = self._counted(reply.pending, key)
        else:
            self.http.ended(key)
        return reply

    def _counted(self, running: Generator[Any, Any, Any], key: tuple[str, str]) -> Generator[Any, Any, Any]:
        try:
            return (yield from running)
        finally:
            self.http.ended(key)

    def _answer(self, request: Request) -> Reply:
        route: Route | None = None
        try:
            self._authorize(request)
            route = self.routes.get(request.path)
            if route is None:
                raise Rejected(json_reply({"detail": "Not Found"}, 404))
            if request.method not in route.methods:
                raise Rejected(json_reply({"detail": "Method Not Allowed"}, 405))
            return route.action(request)
        except Rejected as rejected:
            return rejected.reply
        except BadRequest as error:
            if isinstance(error, InvalidBody) and self.profile.has("validation_errors"):
                return _validation_error(error)
            return _openai_error(error) if route is not None and route.openai else _native_error(error)

    def _build_routes(self) -> dict[str, Route]:
        p = self.profile
        routes = {
            "/health": Route(_GET, self._health),
            "/health_generate": Route(_GET, self._health),
            "/get_server_info": Route(_GET, self._server_info),
            "/get_model_info": Route(_GET, self._model_info),
            "/v1/models": Route(_GET, self._models),
            "/generate": Route(frozenset({"POST", "PUT"}), self._generate),
            "/v1/completions": Route(_POST, self._completions, openai=True),
            "/v1/chat/completions": Route(_POST, self._chat_completions, openai=True),
            "/flush_cache": Route(frozenset({"GET", "POST"}), self._flush_cache),
            "/ping": Route(_GET, lambda _: Reply(200)),
        }
        optional = {
            "/ready": (p.has("ready"), Route(_GET, self._health)),
            "/server_info": (p.has("server_info_path"), Route(_GET, self._server_info)),
            "/model_info": (p.has("model_info_path"), Route(_GET, self._model_info)),
            "/v1/loads": (p.has("v1_loads"), Route(_GET, self._loads)),
            "/metrics": (p.metrics_enabled, Route(_GET, self._metrics)),
        }
        routes.update({path: route for path, (present, route) in optional.items() if present})
        return routes

    def _authorize(self, request: Request) -> None:
        """SGLang's middleware rules: health, metrics and ready are open whatever keys are set;
        /flush_cache takes only the admin key once one is set; the rest need the api key if set."""
        path = request.path
        if path.startswith(("/health", "/metrics")) or path == "/ready":
            return
        admin_key = self.profile.admin_api_key
        required = admin_key if path == "/flush_cache" and admin_key else self.profile.api_key
        if required and not _bearer_matches(request.headers.get("Authorization"), required):
            raise Rejected(json_reply({"error": "Unauthorized"}, 401))

    # -- open endpoints
    def _health(self, _: Request) -> Reply:
        return Reply(200 if self.ready else 503)

    def _metrics(self, _: Request) -> Reply:
        text = metrics_text(self.profile, self.engine.snapshot(), self.http)
        return Reply(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")

    # -- information
    def _server_info(self, _: Request) -> Reply:
        return json_reply(self.profile.server_info(gen_throughput=self.engine.snapshot().throughput))

    def _model_info(self, _: Request) -> Reply:
        return json_reply(self.profile.model_info())

    def _models(self, _: Request) -> Reply:
        return json_reply(self.profile.models())

    def _loads(self, _: Request) -> Reply:
        s = self.engine.snapshot()
        body = self.profile.loads(
            running=s.running,
            waiting=s.waiting,
            used_tokens=s.used_tokens,
            throughput=s.throughput,
            waiting_tokens=s.waiting_tokens,
            prefill_tokens=s.totals.prefill_tokens,
            prefill_busy_us=s.totals.prefill_busy_us,
            decode_moments=s.totals.decode_moments,
        )
        return json_reply(body)

    def _flush_cache(self, _: Request) -> Reply:
        # SGLang answers 400 with the same text when requests are running or waiting.
        status = 400 if self.engine.busy() else 200
        return Reply(status, FLUSH_CACHE_TEXT.encode(), "text/plain; charset=utf-8")

    # -- native generation
    def _generate(self, request: Request) -> Reply:
        received = time.time()
        body = request.json_object()
        prompts, batch = _generate_prompts(body)
        params = body.get("sampling_params") or {}
        if not isinstance(params, dict):
            raise BadRequest("sampling_params must be an object")
        default = self.profile.performance.default_max_new_tokens
        max_new = _max_new_tokens(params.get("max_new_tokens"), default, "max_new_tokens")
        if body.get("stream"):
            if batch:
                raise BadRequest("the simulator streams one prompt per request")
            frames = self._generate_stream(prompts[0], max_new, Timeline(received))
            return Reply(200, content_type="text/event-stream", stream=frames)
        plans = [self._generate_one(p, max_new, Timeline(received)) for p in prompts]
        return Reply(200, pending=self._generate_answer(plans, batch))

    def _generate_answer(self, plans: list[Plan[dict[str, Any]]], batch: bool) -> Plan[Reply]:
        results = yield Parallel(plans)
        return json_reply(results if batch else results[0])

    def _generate_one(self, prompt: Prompt, max_new: int, timeline: Timeline) -> Plan[dict[str, Any]]:
        timeline.dispatched = time.time()
        ids = yield from collect(self.engine.run(prompt, max_new, timeline))
        timeline.first_sent = time.time()  # the whole answer goes out at once
        meta = self._meta_info(uuid.uuid4().hex, prompt, ids, timeline, finished=True, sent=True)
        return {"text": _text_of(ids), "output_ids": ids, "meta_info": meta}

    def _generate_stream(self, prompt: Prompt, max_new: int, timeline: Timeline) -> Frames:
        """Chunks with the cumulative text and ids. The send time is stamped by the first
        chunk and reported again only by the last, as SGLang does."""
        rid, ids, text = uuid.uuid4().hex, [], ""
        timeline.dispatched = time.time()
        for token in self.engine.run(prompt, max_new, timeline):
            if not isinstance(token, int):
                yield token  # a wait
                continue
            ids.append(token)
            text += _token_text(token)  # kept, not rebuilt: a long answer would cost its length squared
            first, last = len(ids) == 1, len(ids) == max_new
            if first:
                timeline.first_sent = time.time()
            meta = self._meta_info(rid, prompt, ids, timeline, finished=last, sent=first or last)
            yield _sse({"text": text, "output_ids": ids, "meta_info": meta})
        yield _SSE_DONE

    def _meta_info(
        self, rid: str, prompt: Prompt, ids: list[int], t: Timeline, *, finished: bool, sent: bool
    ) -> dict[str, Any]:
        """meta_info in the profile's version's key order. Request time stats (0.5.23) add the
        send time; with --enable-metrics also the scheduler's timings on every chunk and the
        tokenizer's timestamps once finished."""
        p = self.profile
        stats = p.has("request_time_stats")
        timed = stats and p.metrics_enabled
        meta: dict[str, Any] = {
            "id": rid,
            "finish_reason": {"type": "length", "length": len(ids)} if finished else None,
            "prompt_tokens": prompt.tokens,
            "weight_version": "default",
            "num_retractions": 0,
        }
        if timed:
            meta.update(_scheduler_timings(t))
        meta.update({"reasoning_tokens": 0, "completion_tokens": len(ids), "cached_tokens": 0})
        if finished and p.has("weight_versions"):
            meta["weight_versions"] = _weight_versions(len(ids))
        if stats:
            # Details come with a prefix-cache hit, which the simulator never has; no DP rank without DP.
            meta.update({"cached_tokens_details": None, "dp_rank": None})
        if finished:
            meta["e2e_latency"] = t.finished - t.received
        if finished and timed:
            meta.update(_tokenizer_timings(t, len(ids)))
        if stats and sent:
            meta["response_sent_to_client_ts"] = t.first_sent
        return meta

    # -- OpenAI-compatible generation
    def _completions(self, request: Request) -> Reply:
        body = request.json_object()
        head = self._openai_head("text_completion", body)
        prompts = _completion_prompts(body.get("prompt"))
        max_new = self._openai_max_tokens(body.get("max_tokens"))
        if body.get("stream"):
            if len(prompts) > 1:
                raise BadRequest("the simulator streams one prompt per request")
            frames = self._completion_frames(head, prompts[0], max_new, _include_usage(body))
            return Reply(200, content_type="text/event-stream", stream=frames)
        return Reply(200, pending=self._completions_answer(head, prompts, max_new))

    def _completions_answer(self, head: dict[str, Any], prompts: list[Prompt], max_new: int) -> Plan[Reply]:
        ids_per_prompt: list[list[int]] = yield Parallel([collect(self.engine.run(p, max_new)) for p in prompts])
        choices = [_completion_choice(i, _text_of(ids), "length") for i, ids in enumerate(ids_per_prompt)]
        usage = self._usage(sum(p.tokens for p in prompts), sum(len(ids) for ids in ids_per_prompt))
        reply = {**head, "choices": choices, "usage": usage}
        if self.profile.has("weight_versions"):
            # Every prompt runs on the same weights; the first answer's span stands for them.
            first = len(ids_per_prompt[0])
            reply["metadata"] = {"weight_version": "default", "weight_versions": _weight_versions(first)}
        return json_reply(reply)

    def _chat_completions(self, request: Request) -> Reply:
        body = request.json_object()
        head = self._openai_head("chat.completion.chunk" if body.get("stream") else "chat.completion", body)
        prompt = _chat_prompt(body.get("messages"))
        limit = body.get("max_completion_tokens")  # the newer OpenAI name wins over max_tokens
        max_new = self._openai_max_tokens(body.get("max_tokens") if limit is None else limit)
        if body.get("stream"):
            frames = self._chat_frames(head, prompt, max_new, _include_usage(body))
            return Reply(200, content_type="text/event-stream", stream=frames)
        return Reply(200, pending=self._chat_answer(head, prompt, max_new))

    def _chat_answer(self, head: dict[str, Any], prompt: Prompt, max_new: int) -> Plan[Reply]:
        ids = yield from collect(self.engine.run(prompt, max_new))
        message: dict[str, Any] = {"role": "assistant", "content": _text_of(ids), "reasoning_content": None}
        if not self.profile.has("lean_chat_answers"):
            message["tool_calls"] = None
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "length", "matched_stop": None}
        metadata: dict[str, Any] = {"weight_version": "default"}
        if self.profile.has("weight_versions"):
            metadata["weight_versions"] = _weight_versions(len(ids))
        reply = {**head, "choices": [choice], "usage": self._usage(prompt.tokens, len(ids)), "metadata": metadata}
        return json_reply(reply)

    def _chat_frames(self, head: dict[str, Any], prompt: Prompt, max_new: int, include_usage: bool) -> Frames:
        # 0.5.23 sends `usage` only in the usage chunk and names reasoning_content in every delta.
        lean = self.profile.has("lean_chat_answers")

        def frame(delta: dict[str, Any], finish: str | None) -> bytes:
            choice = {"index": 0, "delta": {"reasoning_content": None, **delta} if lean else delta}
            choice.update({"logprobs": None, "finish_reason": finish, "matched_stop": None})
            return _sse({**head, "choices": [choice]} if lean else {**head, "choices": [choice], "usage": None})

        generated = 0
        for token in self.engine.run(prompt, max_new):
            if not isinstance(token, int):
                yield token  # a wait
                continue
            if generated == 0:  # SGLang announces the role with the first output
                yield frame({"role": "assistant", "content": ""}, None)
            generated += 1
            yield frame({"content": _token_text(token)}, None)
        yield frame({}, "length")
        if include_usage:
            yield _sse({**head, "choices": [], "usage": self._usage(prompt.tokens, generated)})
        yield _SSE_DONE

    def _completion_frames(
        self, head: dict[str, Any], prompt: Prompt, max_new: int, include_usage: bool
    ) -> Frames:
        # 0.5.23 puts the finish reason on the last token's chunk; older simulated ones add an empty chunk.
        on_last = self.profile.has("finish_on_last_completion_chunk")
        generated = 0
        for token in self.engine.run(prompt, max_new):
            if not isinstance(token, int):
                yield token  # a wait
                continue
            generated += 1
            finish = "length" if on_last and generated == max_new else None
            yield _sse({**head, "choices": [_completion_choice(0, _token_text(token), finish)], "usage": None})
        if not on_last:
            yield _sse({**head, "choices": [_completion_choice(0, "", "length")], "usage": None})
        if include_usage:
            yield _sse({**head, "choices": [], "usage": self._usage(prompt.tokens, generated)})
        yield _SSE_DONE

    def _openai_head(self, obj: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"id": uuid.uuid4().hex, "object": obj, "created": int(time.time()), "model": self._answer_model(body)}

    def _answer_model(self, body: dict[str, Any]) -> str:
        """The model an OpenAI answer names. 0.5.23 echoes the request's, "default" when it names
        none, and serves whatever name it is given; older simulated versions refuse a name they
        do not serve."""
        model = body.get("model")
        if self.profile.has("model_echo"):
            return model if isinstance(model, str) else "default"
        if model is not None and model != self.served_model:
            raise BadRequest(f"The model `{model}` does not exist.", status=404)
        return self.served_model

    def _openai_max_tokens(self, value: Any) -> int:
        return _max_new_tokens(value, self.profile.performance.default_max_new_tokens, "max_tokens")

    def _usage(self, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
            "prompt_tokens_details": None,
            "reasoning_tokens": 0,
        }
        if self.profile.has("completion_tokens_details"):
            usage["completion_tokens_details"] = None
        return usage


def _bearer_matches(header: str | None, key: str) -> bool:
    scheme, _, token = (header or "").strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode())


def _text_of(ids: list[int]) -> str:
    return "".join(_token_text(t) for t in ids)


def _weight_versions(tokens: int) -> list[dict[str, Any]]:
    """Which weights produced which output tokens; the simulator never swaps weights."""
    return [{"version": "default", "start": 0, "end": tokens}]


def _scheduler_timings(t: Timeline) -> dict[str, float]:
    """What the scheduler reports with --enable-metrics, from the first chunk on. No
    hierarchical-cache storage, so nothing was ever waited for there."""
    return {
        "storage_prefetch_wait": 0.0,
        "storage_staging_wait": 0.0,
        "forward_entry_time": t.forward_entry,
        "prefill_finished_time": t.first_token,
        "queue_time": t.forward_entry - t.queued,
    }


def _tokenizer_timings(t: Timeline, completion_tokens: int) -> dict[str, float]:
    """What the tokenizer manager adds with --enable-metrics once a request has finished;
    decode_throughput is left out when there was no decoding to time, as SGLang does."""
    timings = {
        "request_received_ts": t.received,
        "first_token_latency": t.first_token - t.received,
        "api_server_dispatch_finish_ts": t.dispatched,
        "request_finished_ts": t.finished,
    }
    decoding = t.finished - t.first_token
    if decoding > 0 and completion_tokens > 0:
        timings["decode_throughput"] = completion_tokens / decoding
    return timings


def _completion_choice(index: int, text: str, finish: str | None) -> dict[str, Any]:
    return {"index": index, "text": text, "logprobs": None, "finish_reason": finish, "matched_stop": None}


def _include_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and bool(options.get("include_usage"))


# ---- HTTP plumbing ----------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so clients reuse connections
    # Headers and body leave in separate writes: with Nagle's algorithm on, a keep-alive client's
    # delayed ACK would hold every answer back by ~40 ms.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def version_string(self) -> str:
        return "uvicorn"  # what a real SGLang server says

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: a load test would otherwise print a line per request."""

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """What the asyncio server answers, in plain text rather than http.server's HTML page:
        a method it has no route for is 501; a request it cannot parse (a bad request line or
        version, a line over 64 KiB, more than 100 headers) gets uvicorn's own 400 and the
        connection is closed."""
        if code == 501 and self.command:
            status, body = 501, unsupported_method(self.command)
        else:
            status, body = 400, INVALID_REQUEST
            self.close_connection = True
        self.request_version = self.protocol_version  # a garbled request line left it at HTTP/0.9: no head
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _dispatch(self) -> None:
        if "Transfer-Encoding" in self.headers:
            # Chunked request bodies are not read, so the connection cannot be reused after one.
            self.close_connection = True
            self._send(json_reply({"detail": "Length Required"}, 411))
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            self._send(json_reply({"detail": "Invalid Content-Length"}, 400))
            return
        body = self.rfile.read(length) if length > 0 else b""
        request = Request(self.command, urlsplit(self.path).path, self.headers, body)
        self._send(self.server.simulator.handle(request))

    def _send(self, reply: Reply) -> None:
        if reply.pending is not None:
            reply = run_blocking(reply.pending)
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        if reply.stream is None:
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            return
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for frame in reply.stream:
                if isinstance(frame, bytes):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                else:
                    block(frame)
            self.wfile.write(b"0\r\n\r\n")
        finally:
            reply.stream.close()  # a client that left early frees its running slot now


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address: tuple[str, int], simulator: Simulator) -> None:
        self.simulator = simulator
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host name up (getfqdn); skip that lookup.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Hang up on kept-alive clients so their handler threads end, as a stopping server does."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up mid-stream is normal under load; anything else is a simulator bug.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _HTTPServer6(_HTTPServer):
    address_family = socket.AF_INET6


def _loopback_host(host: str) -> str:
    if host == "localhost":
        return "127.0.0.1"
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise SpecError(f"simulator host {host!r} is not a loopback address; use 127.0.0.1")


def _with_keys(profile: Profile, api_key: str | None, admin_api_key: str | None) -> Profile:
    """The profile as if launched with these keys: SGLang reports its own keys in /server_info
    and keeps ``--api-key X`` verbatim in ``launch_command``."""
    keys = {"api_key": api_key, "admin_api_key": admin_api_key}
    given = {name: value for name, value in keys.items() if value is not None}
    if not given:
        return profile
    command = profile.launch_command
    if command:
        command += "".join(f" --{name.replace('_', '-')} {value}" for name, value in given.items())
    return profile.model_copy(update={"server_args": {**profile.server_args, **given}, "launch_command": command})


class SimServer:
    """A simulated SGLang server on a loopback port.

    ``with SimServer(load_profile("llama31-8b-1xh100-0.5.9")) as server: requests.get(server.url + "/health")``

    ``server="asyncio"`` (the default) serves every connection on one event loop, which keeps
    its timing under hundreds of concurrent streams; ``"threaded"`` serves each connection
    in a thread of its own, as the simulator did before.
    """

    def __init__(
        self,
        profile: Profile,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str | None = None,
        admin_api_key: str | None = None,
        ready_after: float = 0.0,
        server: str = "asyncio",
    ) -> None:
        if not 0 <= port <= 65535:
            raise SpecError(f"simulator port {port} is out of range 0-65535")
        if ready_after < 0:
            raise SpecError(f"ready_after must be 0 or more seconds, got {ready_after}")
        if server not in SERVER_KINDS:
            raise SpecError(f"simulator server {server!r} is unknown; use {' or '.join(SERVER_KINDS)}")
        self.host = _loopback_host(host)
        self.port = port
        self.url = ""
        self.kind = server
        self.profile = _with_keys(profile, api_key, admin_api_key)
        self.simulator = Simulator(self.profile, ready_after)
        self._httpd: _HTTPServer | None = None  # the threaded server
        self._sock: socket.socket | None = None  # the asyncio server's listening socket
        self._thread: threading.Thread | None = None
        self._serving = False
        self._stop_requested = False
        self._close_lock = threading.Lock()
        # stop() wakes the serving loop at once, instead of it polling for a flag.
        self._waker = Waker()

    def bind(self) -> SimServer:
        """Listen on the port (idempotent); ``url`` and ``port`` are known from here on."""
        if self._httpd is None and self._sock is None and not self._stop_requested:
            try:
                if self.kind == "threaded":
                    server_class = _HTTPServer6 if ":" in self.host else _HTTPServer
                    self._httpd = server_class((self.host, self.port), self.simulator)
                    bound = self._httpd.server_address
                else:
                    self._sock = _listening_socket(self.host, self.port)
                    bound = self._sock.getsockname()
            except OSError as exc:
                reason = exc.strerror or str(exc)
                raise SimServerError(f"cannot listen on {self.host}:{self.port}: {reason}") from None
            self.port = int(bound[1])
            shown = f"[{self.host}]" if ":" in self.host else self.host
            self.url = f"http://{shown}:{self.port}"
        return self

    def start(self) -> SimServer:
        """Serve in a background daemon thread."""
        if self._thread is None:
            self.bind()
            self._thread = threading.Thread(target=self.serve_forever, name=f"sim-sglang:{self.port}", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until :meth:`stop` (safe to call from a signal handler)."""
        self.bind()
        if self._httpd is None and self._sock is None:  # stopped before serving began, e.g. by an early SIGTERM
            return
        self._serving = True
        self.simulator.mark_started()
        try:
            if self._httpd is not None:
                self._serve_threaded(self._httpd)
            elif self._sock is not None:
                _run_loop(self._serve_asyncio(self._sock))
        finally:
            self._close()

    async def serve_async(self) -> None:
        """Serve on the running event loop until :meth:`stop` (asyncio servers only).

        Many servers can share one loop this way: the shared simulator process serves every
        ``sim://`` host of a test session on its loop (:mod:`.many`). :meth:`stop` called on
        the loop's own thread does not wait; await this coroutine's task to know it is closed."""
        if self.kind != "asyncio":
            raise SpecError(f"serve_async needs the asyncio server, not {self.kind!r}")
        self.bind()
        if self._sock is None:  # stopped before serving began
            return
        self._serving = True
        self.simulator.mark_started()
        try:
            await self._serve_asyncio(self._sock)
        finally:
            self._close()

    def _serve_threaded(self, httpd: _HTTPServer) -> None:
        httpd.timeout = 0  # handle_request() below must never block: the selector said it is ready
        with selectors.DefaultSelector() as selector:
            selector.register(httpd, selectors.EVENT_READ)
            selector.register(self._waker.reader, selectors.EVENT_READ)
            while not self._stop_requested:
                for key, _ in selector.select():
                    if key.fileobj is httpd and not self._stop_requested:
                        httpd.handle_request()

    async def _serve_asyncio(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        stop: asyncio.Future[None] = loop.create_future()

        def woken() -> None:
            if not stop.done():
                stop.set_result(None)

        loop.add_reader(self._waker.reader, woken)
        if self._stop_requested:  # stop() ran before the reader was in place
            woken()
        try:
            await AsyncHTTPServer(sock, self.simulator).serve(stop)
        finally:
            loop.remove_reader(self._waker.reader)

    def stop(self) -> None:
        """Stop serving, join the thread and close every socket. Idempotent."""
        self._stop_requested = True
        self._waker.wake()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        if not self._serving:
            self._close()

    def _close(self) -> None:
        with self._close_lock:
            httpd, self._httpd = self._httpd, None
            sock, self._sock = self._sock, None
            self._serving = False
            if httpd is not None:
                httpd.server_close()
                httpd.close_connections()
            if sock is not None:
                sock.close()
            self._waker.close()

    def __enter__(self) -> SimServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _run_loop(main: Coroutine[Any, Any, None]) -> None:
    """asyncio.run with the simulator's precise-timer loop (3.11 has no loop_factory)."""
    loop = new_event_loop()
    try:
        loop.run_until_complete(main)
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


def _listening_socket(host: str, port: int) -> socket.socket:
    """A non-blocking listening TCP socket, with the backlog a benchmark needs."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # The protocol named, not 0: asyncio turns Nagle's algorithm off only on sockets that say
    # TCP, and with it on, a keep-alive client's delayed ACK holds each stream back ~40 ms.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the threaded HTTPServer does
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
