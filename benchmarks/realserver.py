"""A small OpenAI-compatible server over llama-cpp-python, for reinloop's real-model tier.

``python -m benchmarks.realserver qwen0.5b`` serves a small local model on
127.0.0.1 (``/v1/chat/completions``, ``/v1/models``); ``serving(name)`` starts
it as a child process on a free port, waits until it answers and stops it on
exit, error or Ctrl-C. The eval (``--real``) and ``tests/realmodel`` use it.

What it does beyond ``llama_cpp.server``:

- The prompt is the model's own chat template (from the GGUF) rendered with the
  request's ``tools``; a template that knows no tools (SmolLM2's) gets them as
  JSON schemas in the system message instead.
- A reply that *is* a tool call, as ``<tool_call>`` blocks or as a bare JSON
  object ``{"name": ..., "arguments": {...}}`` naming a given tool (Qwen2.5
  writes the latter), comes back as ``tool_calls``, like Ollama or vLLM's
  ``hermes`` parser would return it. Prose that merely contains JSON stays text.
  ``llama_cpp.server`` returns such replies as plain text, so a native tool
  calling loop never sees a call.
- ``finish_reason`` is ``length`` when ``--max-tokens`` cut the reply; a cut
  reply is never turned into a tool call.
- Greedy (temperature 0) unless the request asks otherwise, with the request's
  ``seed`` when it samples (the same seed gives the same reply); one generation at
  a time. A request's reply does not depend on the requests before it: the prefix
  cache is reused only in whole chunks of :data:`PROMPT_CHUNK` tokens
  (:func:`aligned_llama`). ``GET /stats`` reports tokens and llama.cpp's own prompt/generation
  timings, so throughput can be measured in tokens/s on a busy machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# the shared folder beside the checkout (beside a git worktree's parent, too)
SHARED = next((d / "shared" / "realmodel" for d in ROOT.parents[:2] if (d / "shared" / "realmodel").is_dir()),
              Path("../shared/realmodel"))
WHEELS = SHARED / "wheels"


@dataclass(frozen=True)
class LocalModel:
    """A small GGUF model the real-model tier knows by a short name (``fetch``: the script that downloads it)."""

    name: str
    file: str
    title: str
    fetch: str = "fetch-models.sh"


MODELS = {
    "qwen0.5b": LocalModel("qwen0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                           "Qwen2.5-Coder-0.5B-Instruct Q4_K_M"),
    "qwen1.5b": LocalModel("qwen1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                           "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "fetch-qwen1.5b.sh"),
    "smol135m": LocalModel("smol135m", "SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct Q4_1"),
}


class RealModelUnavailable(RuntimeError):
    """The real-model tier cannot run here: the message says what is missing and how to get it."""


def models_dir() -> Path:
    """Where the GGUF files live: ``$REINLOOP_MODELS``, else ``~/.cache/reinloop-models`` (fetch-models.sh's)."""
    return Path(os.environ.get("REINLOOP_MODELS") or Path.home() / ".cache" / "reinloop-models")


def model_path(name: str) -> Path:
    """The GGUF file of a known model, checked to exist; :class:`RealModelUnavailable` says how to get it."""
    if name not in MODELS:
        raise RealModelUnavailable(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    path = models_dir() / MODELS[name].file
    if not path.is_file():
        raise RealModelUnavailable(f"model file not found: {path}; run {SHARED / MODELS[name].fetch} "
                                   f"(or set REINLOOP_MODELS to the folder that holds it)")
    return path


def check_llama_cpp() -> None:
    """Raise :class:`RealModelUnavailable` when llama-cpp-python cannot be imported."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        wheel = next(iter(sorted(WHEELS.glob("llama_cpp_python-*.whl"))), None)
        how = f"pip install {wheel}" if wheel else "pip install llama-cpp-python (builds from source, ~25 min)"
        raise RealModelUnavailable(f"llama-cpp-python is not installed ({exc}): {how}") from None


PROBE = ("import sys\nfrom llama_cpp import Llama\n"
         "Llama(model_path=sys.argv[1], n_ctx=64, n_threads=1, verbose=False)('Hi', max_tokens=1)\n")
"""Load a model and write one token: the first decode runs the CPU kernels a prebuilt wheel may lack."""
_decodes: dict[Path, str | None] = {}


def check_decodes(path: Path, timeout: float = 300.0) -> None:
    """Raise :class:`RealModelUnavailable` when llama-cpp-python dies writing one token of ``path`` here.

    A wheel built for another CPU imports fine and then dies of ``SIGILL`` at its first decode (the shared
    wheel uses AVX-VNNI, which AMD EPYC lacks). The probe runs in a child process, once per model file and
    process, so a crash is a reason to skip, not a dead test session."""
    if path not in _decodes:
        try:
            done = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True,
                                  timeout=timeout)
            _decodes[path] = None if done.returncode == 0 else _probe_failure(done.returncode, done.stderr)
        except subprocess.TimeoutExpired:
            _decodes[path] = f"llama-cpp-python wrote no token of {path.name} within {timeout:g} s"
    if _decodes[path]:
        raise RealModelUnavailable(_decodes[path])


def _probe_failure(returncode: int, stderr: str) -> str:
    import signal

    if returncode < 0:
        name = signal.Signals(-returncode).name
        return (f"llama-cpp-python died of {name} at its first decode: its libggml-cpu.so uses CPU instructions "
                f"this machine lacks; rebuild that library for this CPU with .ci/rebuild-ggml-cpu (about a minute)")
    last = stderr.strip().splitlines()[-1:] or ["(no output)"]
    return f"llama-cpp-python could not write one token (exit {returncode}): {last[0][:300]}"


def sha256_of(path: Path) -> str:
    """The file's sha256 (hex), as recorded beside benchmark results."""
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------- client side: start, wait, stop

@dataclass(frozen=True)
class Server:
    """A running server: its base URL (for ``base_url=``) and the model file it serves."""

    base_url: str
    model: Path
    process: subprocess.Popen[str]

    def stats(self) -> dict[str, Any]:
        """The server's counters since it started (tokens, llama.cpp timings, finish reasons)."""
        with urllib.request.urlopen(self.base_url + "/stats", timeout=10) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]


@contextlib.contextmanager
def serving(name: str, *, max_tokens: int = 256, n_ctx: int = 4096, threads: int | None = None,
            start_timeout: float = 120.0, log: Path | None = None) -> Iterator[Server]:
    """Serve model ``name`` from a child process on a free port for the ``with`` block, then stop it.

    ``log``: the server appends every request and raw reply to this JSON-lines file.
    """
    check_llama_cpp()
    path = model_path(name)
    check_decodes(path)
    command = [sys.executable, "-m", "benchmarks.realserver", name, "--port", "0",
               "--max-tokens", str(max_tokens), "--n-ctx", str(n_ctx), "--threads", str(threads or os.cpu_count() or 2)]
    command += ["--log", str(Path(log).resolve())] if log else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # own session: a Ctrl-C reaches only the parent, which then stops the server in ``finally``;
    # stderr goes to a file, which never fills up and blocks the server as an unread pipe would
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errors:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=errors,
                                   text=True, start_new_session=True)
        try:
            base_url = _wait_until_listening(process, start_timeout, path, errors)
            yield Server(base_url, path, process)
        finally:
            _stop(process)


def _wait_until_listening(process: subprocess.Popen[str], timeout: float, path: Path, errors: Any) -> str:
    """The base URL the child prints once the model is loaded, checked with ``GET /v1/models``."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        url = next((line.split()[-1] for line in lines if line.startswith("listening on ")), None)
        if url and _answers(url):
            return url
        if process.poll() is not None:
            errors.seek(0)
            error = errors.read().strip().splitlines()
            raise RealModelUnavailable(f"the model server for {path} exited with code {process.returncode}: "
                                       f"{error[-1] if error else 'no output'}")
        time.sleep(0.1)
    raise RealModelUnavailable(f"the model server for {path} did not answer GET /v1/models within {timeout:.0f} s")


def _answers(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(base_url + "/models", timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout:
        process.stdout.close()


# ---------------------------------------------------------------- server side: prompt, reply, calls

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.S)
_FENCED = re.compile(r"\A```[A-Za-z]*\s*(.*?)\s*(?:```|\Z)", re.S)


def parse_calls(text: str, names: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a reply starts with (``<tool_call>`` blocks or bare JSON objects), else ``[]``.

    A reply is a call when it begins with one (after an optional code fence);
    what follows the calls (a small model often goes on to imagine the result)
    is dropped, as Ollama's and vLLM's parsers drop it. Prose that merely
    contains JSON is no call.
    """
    text = text.strip()
    if "<tool_call>" in text:
        bodies = _TAGGED.findall(text)
    else:
        fenced = _FENCED.match(text)
        bodies = [fenced.group(1) if fenced else text]
    calls = []
    for body in bodies:
        decoder, rest = json.JSONDecoder(), body.strip()
        while rest.startswith("{"):  # several objects, one after another, are several calls
            try:
                obj, end = decoder.raw_decode(rest)
            except ValueError:
                break
            call = _as_call(obj, names)
            if call is None:
                break
            calls.append(call)
            rest = rest[end:].strip()
    return calls


def _as_call(obj: Any, names: set[str]) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(obj, dict) or obj.get("name") not in names:
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    return (obj["name"], args) if isinstance(args, dict) else None


def _text(content: Any) -> str:
    if isinstance(content, list):  # OpenAI content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def template_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                      template_knows_tools: bool) -> list[dict[str, Any]]:
    """The request's messages as a chat template expects them.

    Call arguments become objects (templates ``tojson`` them). For a template
    without tool support, the tools go into the system message, calls are
    written back as the JSON the model was asked for, and results become user turns.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        message = {**message, "content": _text(message.get("content"))}
        if message["role"] == "developer":
            message["role"] = "system"
        calls = [{**c, "function": {**c["function"], "arguments": _decoded(c["function"].get("arguments"))}}
                 for c in message.get("tool_calls") or []]
        if calls:
            message["tool_calls"] = calls
        if not template_knows_tools and calls:
            written = [json.dumps({"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
                                  ensure_ascii=False) for c in calls]
            message = {"role": "assistant", "content": "\n".join(filter(None, [message["content"], *written]))}
        elif not template_knows_tools and message["role"] == "tool":
            message = {"role": "user", "content": f"Result of {message.get('name') or 'the function'}: {message['content']}"}
        out.append(message)
    if tools and not template_knows_tools:
        described = _tools_text(tools)
        if out and out[0]["role"] == "system":
            out[0] = {**out[0], "content": out[0]["content"] + "\n\n" + described}
        else:
            out.insert(0, {"role": "system", "content": described})
    return out


def grammar_format(response_format: Any) -> dict[str, Any] | None:
    """OpenAI's ``response_format`` as llama-cpp-python takes it: a JSON schema (``{"type": "json_schema",
    "json_schema": {"schema": ...}}``) or any JSON object (``{"type": "json_object"}``), held by a grammar."""
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        return {"type": "json_object", **({"schema": schema} if isinstance(schema, dict) else {})}
    return {"type": "json_object"} if response_format.get("type") == "json_object" else None


def _decoded(arguments: Any) -> Any:
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            return json.loads(arguments or "{}")
    return arguments


def _tools_text(tools: list[dict[str, Any]]) -> str:
    schemas = "\n".join(json.dumps(t.get("function", t), ensure_ascii=False) for t in tools)
    return ("You can call these functions:\n" + schemas + "\n\nTo call one, reply with only a JSON object: "
            '{"name": "<function name>", "arguments": {...}}. When you know the answer, reply with it as plain text.')


PROMPT_CHUNK = 128
"""Prompts are evaluated in batches of this many tokens, counted from the prompt's first token."""


def aligned_llama(llama_class: type) -> type:
    """``llama_class`` (``llama_cpp.Llama``) whose greedy reply to a prompt is the same whatever was asked before.

    llama.cpp's numbers depend on how a prompt is split into batches. llama-cpp-python reuses the
    longest cached prefix and evaluates the rest from there, so the same request gave a different
    greedy reply after a different request: Qwen2.5-Coder-0.5B answered one wrap-up prompt "The area,
    and two times the result." fresh and "The area of 杭州 is 33700 square kilometers" after a prompt
    sharing its first ~600 tokens. This class reuses the cache only in whole :data:`PROMPT_CHUNK`
    chunks that an earlier prompt filled, each computed from position 0 in the same batches a fresh
    evaluation uses, and evaluates the rest in such chunks (at most ``PROMPT_CHUNK - 1`` extra tokens
    a request, and none of a generated reply's, whose tokens were evaluated one by one).
    """

    class Aligned(llama_class):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, n_batch=PROMPT_CHUNK, **kwargs)
            self.clean = 0  # cached tokens [0, clean) came from whole chunks of a prompt
            self.prompt_next = False

        def create_chat_completion(self, *args: Any, **kwargs: Any) -> Any:
            self.prompt_next = True
            return super().create_chat_completion(*args, **kwargs)

        def eval(self, tokens: Any) -> None:
            if not self.prompt_next:  # a generated token
                return super().eval(tokens)
            self.prompt_next = False
            start = self.n_tokens  # what llama-cpp-python kept of the cache
            keep = min(start, self.clean) // PROMPT_CHUNK * PROMPT_CHUNK
            tokens = [int(t) for t in self.input_ids[keep:start]] + list(tokens)
            self.n_tokens = keep
            super().eval(tokens)
            self.clean = self.n_tokens // PROMPT_CHUNK * PROMPT_CHUNK

        def reset(self) -> None:
            super().reset()
            self.clean = 0

    return Aligned


class ContextExceeded(ValueError):
    """The prompt and the reply's room do not fit the model's context window (``n_ctx`` tokens)."""

    def __init__(self, message: str, n_ctx: int) -> None:
        super().__init__(message)
        self.n_ctx = n_ctx


class ModelServer:
    """One loaded model, answering one chat completion at a time, with running counters."""

    def __init__(self, path: Path, *, max_tokens: int, n_ctx: int, threads: int, log: Path | None = None) -> None:
        from llama_cpp import Llama

        self.llm = aligned_llama(Llama)(model_path=str(path), n_ctx=n_ctx, n_threads=threads, verbose=False)
        self.path, self.max_tokens = path, max_tokens
        self.knows_tools = "tools" in str(self.llm.metadata.get("tokenizer.chat_template", ""))
        self.lock = threading.Lock()
        self.counters: Counter[str] = Counter()
        self.timings = {"prompt_ms": 0.0, "generation_ms": 0.0}
        self.finish_reasons: list[str] = []
        self.log = log

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """An OpenAI chat completion for ``request`` (``stream`` is answered by the handler)."""
        tools = request.get("tools") if request.get("tool_choice") != "none" else None
        limit = min(int(request.get("max_completion_tokens") or request.get("max_tokens") or self.max_tokens),
                    self.max_tokens)
        with self.lock:
            reply = self._generate(template_messages(request.get("messages") or [], tools, self.knows_tools),
                                   tools if self.knows_tools else None, limit, float(request.get("temperature") or 0.0),
                                   request.get("seed"), grammar_format(request.get("response_format")))
        choice = reply["choices"][0]
        text, finish = _text(choice["message"].get("content")), choice["finish_reason"]
        names = {t.get("function", t).get("name") for t in tools or []}
        calls = parse_calls(text, names) if tools and finish == "stop" else []
        message: dict[str, Any] = {"role": "assistant", "content": text.strip()}
        if calls:
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_" + uuid.uuid4().hex[:12], "type": "function",
                 "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}} for name, args in calls]}
            finish = "tool_calls"
        self.finish_reasons.append(finish)
        if self.log is not None:  # what the model was sent and wrote, to explain a run after the fact
            with self.log.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"messages": request.get("messages"), "tools": [t.get("function", t).get("name")
                                     for t in tools or []], "text": text, "finish_reason": finish,
                                     "usage": reply["usage"]}, ensure_ascii=False) + "\n")
        return {"id": "chatcmpl-" + uuid.uuid4().hex[:16], "object": "chat.completion", "created": int(time.time()),
                "model": request.get("model") or "local",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": reply["usage"]}

    def _generate(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, limit: int,
                  temperature: float, seed: int | None = None, shape: dict[str, Any] | None = None) -> dict[str, Any]:
        import llama_cpp

        llama_cpp.llama_perf_context_reset(self.llm.ctx)
        try:
            reply = self.llm.create_chat_completion(messages=messages, tools=tools, max_tokens=limit,  # type: ignore[arg-type]
                                                    temperature=temperature, seed=seed, response_format=shape)
        except ValueError as exc:
            if "exceed context window" in str(exc):  # llama-cpp-python's only sign of it: its message
                raise ContextExceeded(f"the request exceeds the available context size: {exc}", self.llm.n_ctx()) from exc
            raise
        perf = llama_cpp.llama_perf_context(self.llm.ctx)
        usage = reply["usage"]  # type: ignore[index]
        self.counters.update(requests=1, prompt_tokens=usage["prompt_tokens"],
                             completion_tokens=usage["completion_tokens"],
                             prompt_tokens_evaluated=perf.n_p_eval, tokens_generated=perf.n_eval)
        self.timings["prompt_ms"] += perf.t_p_eval_ms
        self.timings["generation_ms"] += perf.t_eval_ms
        return reply  # type: ignore[return-value]

    def stats(self) -> dict[str, Any]:
        """Counters since start, with llama.cpp's throughput (prompt tokens evaluated after cache reuse)."""
        c, t = self.counters, self.timings
        return {**c, **{k: round(v) for k, v in t.items()},
                "prompt_tokens_per_s": round(1000 * c["prompt_tokens_evaluated"] / t["prompt_ms"], 1) if t["prompt_ms"] else None,
                "generation_tokens_per_s": round(1000 * c["tokens_generated"] / t["generation_ms"], 1) if t["generation_ms"] else None,
                "finish_reasons": dict(Counter(self.finish_reasons)), "last_finish_reasons": self.finish_reasons[-20:]}


def _handler(model: ModelServer, name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
            pass  # one line per request would drown the eval's output

        def do_GET(self) -> None:
            path = self.path.rstrip("/")
            if path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "local"}]})
            elif path == "/v1/stats":
                self._json(200, model.stats())
            else:
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                reply = model.complete(request)
            except ContextExceeded as exc:  # as llama.cpp's server answers it
                return self._json(400, {"error": {"code": 400, "message": str(exc), "type": "exceed_context_size_error",
                                                  "n_ctx": exc.n_ctx}})
            except (ValueError, KeyError, TypeError, AttributeError) as exc:  # a malformed body is answered
                return self._json(400, {"error": {"message": f"{type(exc).__name__}: {exc}", "type": "invalid_request_error"}})
            if request.get("stream"):
                return self._stream(reply)
            self._json(200, reply)

        def _json(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body, ensure_ascii=False).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, reply: dict[str, Any]) -> None:
            """The whole reply as one delta chunk, a finish chunk and a usage chunk."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            message, finish = reply["choices"][0]["message"], reply["choices"][0]["finish_reason"]
            delta = {"role": "assistant", "content": message.get("content") or ""}
            if message.get("tool_calls"):
                delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(message["tool_calls"])]
            head = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
            for choices in ([{"index": 0, "delta": delta, "finish_reason": None}],
                            [{"index": 0, "delta": {}, "finish_reason": finish}], []):
                chunk = head | {"choices": choices} | ({} if choices else {"usage": reply["usage"]})
                self.wfile.write(b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            self.close_connection = True

    return Handler


def _exit_with_parent() -> None:
    """Stop serving when the process that started us is gone (e.g. killed with SIGKILL)."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realserver", description=__doc__.splitlines()[0])
    parser.add_argument("model", help=f"one of {', '.join(MODELS)}, or a path to a GGUF file")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port [8765]")
    parser.add_argument("--max-tokens", type=int, default=256, help="cap on every reply's length [256]")
    parser.add_argument("--n-ctx", type=int, default=4096, help="context window in tokens [4096]")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--log", type=Path, help="append every request's messages, the raw reply and its finish "
                        "reason to this JSON-lines file")
    args = parser.parse_args(argv)
    try:
        path = Path(args.model) if args.model.endswith(".gguf") else model_path(args.model)
        check_llama_cpp()
    except RealModelUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    model = ModelServer(path, max_tokens=args.max_tokens, n_ctx=args.n_ctx, threads=args.threads, log=args.log)
    # a thread per connection (clients keep theirs open), one generation at a time (ModelServer.lock)
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), _handler(model, args.model))
    httpd.daemon_threads = True
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    print(f"listening on http://127.0.0.1:{httpd.server_address[1]}/v1", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        httpd.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
