"""A scripted OpenAI-compatible chat server on 127.0.0.1, for driving the real client offline.

Each queued response is either a reply (text and/or tool calls) turned into a
``chat.completion`` body, or a raw ``(status, body, headers)`` triple for
failure cases. Every request body is recorded. A request with ``"stream": true``
gets its reply as server-sent events in OpenAI's chunk shape, with a final
usage chunk when ``stream_options.include_usage`` is set. With ``reply=`` (a function of
the request body returning a response), replies are computed from each
request once the queue is empty: concurrent runs then cannot take each
other's replies, as they would from one shared queue.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from collections.abc import Callable
from typing import Any

from .local_net import LocalHTTPServer


PLAUSIBLE = {"prompt_tokens": 960, "completion_tokens": 40}
"""Usage an honest endpoint could report for one of reinloop's small test requests (1,000 tokens a call):
the default 12/7 is far below reinloop's own count of any request, so it is not believed (reinloop.pricing)."""


LLAMA_CPP_TOO_LONG = {"error": {"code": 400, "message": "request (4476 tokens) exceeds the available context size "
                                 "(4096 tokens)", "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}}
"""What llama.cpp's server answers (HTTP 400) for a prompt longer than its context: the HTTP status as ``code``, the
kind as ``type``."""


def completion(text: str = "", tool_calls: list[dict[str, Any]] | None = None,
               prompt_tokens: int = 12, completion_tokens: int = 7, finish_reason: str | None = None,
               model: str = "scripted", refusal: str | None = None) -> dict[str, Any]:
    """A ``chat.completion`` body with one choice (``finish_reason="length"``: cut off at the token cap;
    ``model``: the name the server reports; ``refusal``: OpenAI's field for a model that declined)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if refusal is not None:
        message.update(content=None, refusal=refusal)
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": c.get("id", f"call_{i}"),
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": c["arguments"] if isinstance(c.get("arguments"), str)
                    else json.dumps(c.get("args", {}), ensure_ascii=False),
                },
            }
            for i, c in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def stream_events(body: dict[str, Any], include_usage: bool, pieces: int = 3) -> bytes:
    """A ``chat.completion`` body as the server-sent events of a streamed reply, in OpenAI's chunk shape.

    The role first, the text in ``pieces`` chunks, each tool call's name then its arguments in
    ``pieces`` chunks, the finish reason, a usage chunk (no choices) when asked, and ``[DONE]``.
    """
    choice = body["choices"][0]
    message, head = choice["message"], {k: body[k] for k in ("id", "created", "model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def split(text: str) -> list[str]:
        size = max(1, -(-len(text) // pieces))
        return [text[i:i + size] for i in range(0, len(text), size)]

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in split(message.get("content") or "")]
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        chunks.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                             "function": {"name": function["name"], "arguments": ""}}]}))
        chunks += [chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
                   for piece in split(function["arguments"])]
    chunks.append(chunk({}, choice["finish_reason"]))
    if include_usage and "usage" in body:  # a body without usage: an endpoint that reports none
        chunks.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": body["usage"]})
    return b"".join(f"data: {json.dumps(c, ensure_ascii=False)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


class Raw:
    """A raw HTTP response: status, body bytes or text, headers, optional delay."""

    def __init__(self, status: int, body: str | bytes = b"", headers: dict[str, str] | None = None,
                 delay: float = 0.0) -> None:
        self.status, self.headers, self.delay = status, headers or {}, delay
        self.body = body.encode() if isinstance(body, str) else body


class OpenAIServer(LocalHTTPServer):
    """Serve queued responses to ``POST /v1/chat/completions``."""

    def __init__(self, responses: list[Any] | None = None, reply: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.responses: list[Any] = list(responses or [])
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:  # the client died mid-request (a killed worker): nobody to answer
                    self.close_connection = True
                    return
                with server._lock:
                    server.requests.append(body)
                    queued = server.responses.pop(0) if server.responses else None
                if queued is not None:
                    item = queued
                elif server.reply is not None:
                    item = server.reply(body)
                else:
                    item = Raw(500, json.dumps({"error": {"message": "script exhausted"}}))
                if not isinstance(item, Raw):
                    reply = (item if isinstance(item, dict) and "choices" in item
                             else completion(**item) if isinstance(item, dict) else completion(str(item)))
                    if body.get("stream"):  # server-sent events, as the OpenAI API streams
                        usage = bool((body.get("stream_options") or {}).get("include_usage"))
                        item = Raw(200, stream_events(reply, usage), {"Content-Type": "text/event-stream"})
                    else:
                        item = Raw(200, json.dumps(reply))
                if item.delay:
                    time.sleep(item.delay)
                try:
                    self.send_response(item.status)
                    if "Content-Type" not in item.headers:
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(item.body)))
                    for k, v in item.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(item.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        super().__init__(Handler)

    @property
    def base_url(self) -> str:
        """The ``base_url`` to give the OpenAI client."""
        return f"http://127.0.0.1:{self.port}/v1"
