"""OpenTelemetry spans of a run: the tree, the GenAI and reinloop attributes, contents off by default, resumes."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from langgraph.types import Command
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from reinloop import Limits
from reinloop.checkpoints import open_database
from reinloop.errors import TelemetrySetupError
from reinloop.testing import tool_call

from .local_net import LocalHTTPServer, free_port
from .openai_server import completion

SECRET = "the launch code is 4417"
THREAD = {"configurable": {"thread_id": "t1"}}


@pytest.fixture
def spans() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A tracer provider of the test's own, keeping every finished span in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    """The finished spans called ``name``, in the order they started."""
    return sorted((s for s in exporter.get_finished_spans() if s.name == name), key=lambda s: s.start_time)


def children(exporter: InMemorySpanExporter, parent: ReadableSpan) -> list[str]:
    """The names of ``parent``'s child spans, in the order they started."""
    found = [s for s in exporter.get_finished_spans() if s.parent is not None and s.parent.span_id == parent.context.span_id]
    return [s.name for s in sorted(found, key=lambda s: s.start_time)]


def traced(make_graph, spans, replies, **kwargs):
    provider, _ = spans
    graph, _ = make_graph(replies, telemetry=True, tracer_provider=provider, **kwargs)
    return graph


def test_a_run_is_one_span_with_a_step_span_per_step_and_its_model_and_tool_calls_under_it(make_graph, spans):
    graph = traced(make_graph, spans, [[tool_call("calculator", {"expression": "2*3"}, id="c1")], "6"])
    graph.invoke({"task": "2*3?"})
    exporter = spans[1]
    (run,) = named(exporter, "invoke_agent reinloop")
    steps = named(exporter, "reinloop.step")
    assert children(exporter, run) == ["reinloop.step", "reinloop.step"]
    assert children(exporter, steps[0]) == ["chat ScriptedChatModel", "execute_tool calculator"]
    assert children(exporter, steps[1]) == ["chat ScriptedChatModel"]
    assert {s.context.trace_id for s in exporter.get_finished_spans()} == {run.context.trace_id}
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["reinloop.status"] == "done"
    assert run.attributes["reinloop.counters.steps"] == 2
    assert run.attributes["reinloop.limits.max_steps"] == Limits().max_steps
    assert [s.attributes["reinloop.step"] for s in steps] == [1, 2]
    assert [s.attributes["reinloop.guard.decision"] for s in steps] == ["continue", "finish"]
    chat = named(exporter, "chat ScriptedChatModel")[0]
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 10 and chat.attributes["gen_ai.usage.output_tokens"] == 5
    tool = named(exporter, "execute_tool calculator")[0]
    assert dict(tool.attributes).items() >= {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calculator",
                                             "gen_ai.tool.call.id": "c1", "reinloop.tool.status": "ok"}.items()
    assert steps[0].start_time <= chat.start_time <= chat.end_time <= tool.start_time <= tool.end_time <= steps[0].end_time


def test_parallel_calls_to_one_tool_are_each_timed_by_their_own_runs(make_graph, spans):
    from langchain_core.tools import tool

    from reinloop.tools import configure

    began: dict[tuple[str, int], int] = {}
    lock, b_began, a_retried = threading.Lock(), threading.Event(), threading.Event()

    @tool
    def fetch(key: str) -> str:
        """Fetch a key."""
        with lock:
            attempt = 1 + sum(1 for k, _ in began if k == key)
            began[(key, attempt)] = time.time_ns()
        if key == "b":  # b runs from before a's retry to after it: start order pairs a's retry with b
            b_began.set()
            assert a_retried.wait(30)
        elif attempt == 1:
            assert b_began.wait(30)
            raise ConnectionError("flaky")
        else:
            a_retried.set()
        return key

    tools = [configure(fetch, parallel_safe=True, retries=1, backoff=0.001)]
    replies = [[tool_call("fetch", {"key": "a"}, id="ca"), tool_call("fetch", {"key": "b"}, id="cb")], "done"]
    traced(make_graph, spans, replies, tools=tools).invoke({"task": "fetch a and b"})
    by_id = {s.attributes["gen_ai.tool.call.id"]: s for s in named(spans[1], "execute_tool fetch")}
    assert by_id["ca"].attributes["reinloop.tool.attempts"] == 2
    assert by_id["ca"].start_time <= began[("a", 1)] and by_id["ca"].end_time >= began[("a", 2)]
    assert by_id["cb"].start_time <= began[("b", 1)] < began[("a", 2)]


def test_the_summarizers_call_is_a_chat_span_of_the_step_it_ran_in(make_graph, spans):
    from reinloop import Memory

    from .memory.conftest import read_page, reads

    graph = traced(make_graph, spans, [*reads(range(1, 7)), "done"], tools=[read_page],
                   memory=Memory(summary_batch=3, window_steps=3))  # folds by 3 steps, not by size
    graph.invoke({"task": "read"})
    chats = named(spans[1], "chat ScriptedChatModel")
    steps = {s.context.span_id: s.attributes["reinloop.step"] for s in named(spans[1], "reinloop.step")}
    assert len(chats) == 8  # seven steps' calls and the summary of steps 1-3, made at step 7
    assert [steps[c.parent.span_id] for c in chats] == [1, 2, 3, 4, 5, 6, 7, 7]


def test_streamed_tokens_still_reach_the_messages_stream_with_telemetry_on(openai_server, spans):
    from reinloop import build_graph
    from reinloop.tools import builtins

    openai_server.responses += [completion("Let me compute.", tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}}]),
                                completion("6*7 is 42")]
    graph = build_graph("openai:gpt-4o-mini", builtins("calculator"), base_url=openai_server.base_url,
                        telemetry=True, tracer_provider=spans[0])
    pieces = [(m.content, meta["langgraph_node"]) for m, meta in graph.stream({"task": "6*7?"}, stream_mode="messages")
              if m.content]
    assert "".join(p[0] for p in pieces) == "Let me compute.6*7 is 42" and {p[1] for p in pieces} == {"decide"}
    assert [s.attributes["gen_ai.request.model"] for s in named(spans[1], "chat gpt-4o-mini")] == ["gpt-4o-mini"] * 2


def test_a_parse_error_marks_its_step_without_the_reply_in_it(make_graph, spans):
    from reinloop.testing import cut_off

    cut = cut_off('{"name": "calculator", "arguments": {"expression": "(3*12.5)"}')
    graph = traced(make_graph, spans, [cut, [tool_call("calculator", {"expression": "3*12.5"})], "37.5"])
    graph.invoke({"task": "3 items at 12.5"})
    steps = named(spans[1], "reinloop.step")
    assert [s.attributes.get("reinloop.parse_error", False) for s in steps] == [True, False, False]
    assert "reinloop.parse_error.message" not in steps[0].attributes


def test_a_tool_error_is_an_error_span_and_is_counted(make_graph, spans):
    graph = traced(make_graph, spans, [[tool_call("calculator", {"expression": "1/0"}, id="bad")], "I cannot divide by 0"])
    graph.invoke({"task": "1/0?"})
    (tool,) = named(spans[1], "execute_tool calculator")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes["error.type"] == "error" and tool.attributes["gen_ai.tool.call.id"] == "bad"
    assert named(spans[1], "reinloop.step")[0].attributes["reinloop.tool_errors"] == 1
    assert named(spans[1], "invoke_agent reinloop")[0].attributes["reinloop.counters.errors"] == 1


def test_a_break_ends_the_run_span_with_its_reason(make_graph, spans):
    replies = [[tool_call("calculator", {"expression": f"1+{i}"})] for i in range(3)]
    graph = traced(make_graph, spans, replies, limits=Limits(max_steps=2))
    graph.invoke({"task": "count"})
    (run,) = named(spans[1], "invoke_agent reinloop")
    assert run.attributes["reinloop.status"] == "broken" and run.attributes["reinloop.break_reason"] == "max_steps"
    assert named(spans[1], "reinloop.step")[-1].attributes["reinloop.guard.decision"] == "break"


def test_a_resumed_run_continues_the_trace_with_a_link_to_the_part_before(make_graph, spans, tmp_path):
    replies = [[tool_call("calculator", {"expression": f"1+{i}"})] for i in range(3)] + ["3"]
    with open_database(tmp_path / "runs.db") as db:
        graph = traced(make_graph, spans, replies, limits=Limits(max_steps=1), checkpointer=db.checkpointer)
        graph.invoke({"task": "count"}, THREAD)
        graph.invoke(Command(resume={"action": "continue", "extra_steps": 1}), THREAD)
        graph.invoke(Command(resume={"action": "continue", "extra_steps": 5}), THREAD)
    first, second, third = named(spans[1], "invoke_agent reinloop")
    assert first.attributes["reinloop.status"] == "paused" and third.attributes["reinloop.status"] == "done"
    assert first.context.trace_id == second.context.trace_id == third.context.trace_id
    assert first.parent is None and second.parent.span_id == third.parent.span_id == first.context.span_id
    assert [link.context.span_id for link in second.links] == [first.context.span_id]
    assert [link.context.span_id for link in third.links] == [second.context.span_id]
    assert [second.attributes["reinloop.resumed"], first.attributes["reinloop.resumed"]] == [True, False]
    # the operator's answer is judged before a new step: one step left, so the guard goes on with a hint
    assert [e.attributes["reinloop.guard.decision"] for e in second.events if e.name == "reinloop.resume"] == ["hint"]


def test_a_run_checkpointed_under_the_earlier_two_trace_keys_continues_its_trace(make_graph, spans, tmp_path):
    from reinloop.observe.telemetry import PART_KEY, ROOT_KEY

    root, part = f"00-{7:032x}-{1:016x}-01", f"00-{7:032x}-{2:016x}-01"
    with open_database(tmp_path / "runs.db") as db:
        graph, _ = make_graph([[tool_call("calculator", {"expression": "1+1"})]], limits=Limits(max_steps=1),
                              checkpointer=db.checkpointer)
        graph.invoke({"task": "count"}, {**THREAD, "metadata": {ROOT_KEY: root, PART_KEY: part}})  # an earlier reinloop
        traced(make_graph, spans, ["2"], checkpointer=db.checkpointer).invoke(
            Command(resume={"action": "continue", "extra_steps": 1}), THREAD)
    (resumed,) = named(spans[1], "invoke_agent reinloop")
    assert (resumed.context.trace_id, resumed.parent.span_id) == (7, 1)
    assert [link.context.span_id for link in resumed.links] == [2]


def test_a_new_task_on_a_thread_starts_a_new_trace(make_graph, spans, tmp_path):
    with open_database(tmp_path / "runs.db") as db:
        graph = traced(make_graph, spans, ["1", "2"], checkpointer=db.checkpointer)
        graph.invoke({"task": "one"}, THREAD)
        graph.invoke({"task": "two"}, THREAD)
    first, second = named(spans[1], "invoke_agent reinloop")
    assert first.context.trace_id != second.context.trace_id and not second.links


def all_values(exporter: InMemorySpanExporter) -> str:
    """Every attribute and event attribute value of every span, as one text."""
    values: list[Any] = []
    for span in exporter.get_finished_spans():
        values += list(span.attributes.values())
        values += [v for event in span.events for v in event.attributes.values()]
    return json.dumps(values, default=str)


def test_contents_are_left_out_of_the_spans_by_default(make_graph, spans):
    graph = traced(make_graph, spans, [[tool_call("get_weather", {"city": "Oslo 4417"})], SECRET])
    graph.invoke({"task": f"remember: {SECRET}"})
    text = all_values(spans[1])
    assert "4417" not in text and "Oslo" not in text
    keys = {k for s in spans[1].get_finished_spans() for k in s.attributes}
    assert not keys & {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                       "gen_ai.tool.call.result"}


def test_contents_are_recorded_with_telemetry_content(make_graph, spans):
    graph = traced(make_graph, spans, [[tool_call("get_weather", {"city": "Oslo"})], SECRET], telemetry_content=True)
    graph.invoke({"task": f"remember: {SECRET}"})
    chat = named(spans[1], "chat ScriptedChatModel")
    asked = json.loads(chat[0].attributes["gen_ai.input.messages"])
    assert any(SECRET in part["content"] for m in asked for part in m["parts"])
    assert json.loads(chat[1].attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == SECRET
    (tool,) = named(spans[1], "execute_tool get_weather")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"city": "Oslo"}
    assert "Oslo" in tool.attributes["gen_ai.tool.call.result"]


def test_telemetry_off_makes_no_spans_and_adds_nothing_to_the_graph(make_graph, spans):
    provider, exporter = spans
    graph, _ = make_graph(["done"], tracer_provider=provider)
    graph.invoke({"task": "t"})
    assert graph.reinloop_context.telemetry is None and exporter.get_finished_spans() == ()


def test_telemetry_without_the_sdk_says_what_to_install(make_graph, monkeypatch):
    monkeypatch.delitem(sys.modules, "reinloop.observe.telemetry", raising=False)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if the extra were not installed
    with pytest.raises(TelemetrySetupError, match=r"pip install 'reinloop\[otel\]'") as info:
        make_graph(["done"], telemetry=True)
    assert info.value.missing == "opentelemetry"


GLOBAL_PROVIDER = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from reinloop import build_graph
from reinloop.testing import ScriptedChatModel
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
build_graph(ScriptedChatModel(replies=["ok"]), [], telemetry=True).invoke({"task": "t"})
print(sorted(s.name for s in exporter.get_finished_spans()))
"""


def test_a_global_tracer_provider_set_by_the_caller_receives_the_spans():
    proc = subprocess.run([sys.executable, "-c", GLOBAL_PROVIDER], capture_output=True, text=True, check=True, timeout=600)
    assert proc.stdout.strip() == "['chat ScriptedChatModel', 'invoke_agent reinloop', 'reinloop.step']"


class Collector(LocalHTTPServer):
    """A stub OTLP/HTTP collector on 127.0.0.1: decodes every ``POST /v1/traces`` into its spans."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                ok = self.path == "/v1/traces" and self.headers.get("Content-Type") == "application/x-protobuf"
                if ok:
                    collector.requests.append(ExportTraceServiceRequest.FromString(body))
                self.send_response(200 if ok else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        super().__init__(Handler)

    def spans(self) -> list[tuple[str, dict[str, Any], Any]]:
        """Each received span as (name, attributes, its resource's attributes)."""
        found = []
        for request in self.requests:
            for resource in request.resource_spans:
                service = {a.key: a.value.string_value for a in resource.resource.attributes}
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        found.append((span.name, {a.key: a.value for a in span.attributes}, service))
        return found

    def runs(self) -> list[Any]:
        """The received ``invoke_agent`` spans (protobuf), in the order they arrived."""
        return [span for request in self.requests for resource in request.resource_spans
                for scope in resource.scope_spans for span in scope.spans if span.name.startswith("invoke_agent")]



def test_the_cli_exports_over_otlp_http_to_the_endpoint_the_standard_variables_name(openai_server, tmp_path):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "2*3"}}]),
                                completion("6")]
    with Collector() as collector:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.port}",
               "OTEL_SERVICE_NAME": "reinloop-test", "OPENAI_API_KEY": "not-needed"}
        proc = subprocess.run([sys.executable, "-m", "reinloop", "run", "2*3?", "--model", "openai:gpt-4o-mini",
                               "--base-url", openai_server.base_url, "--tools", "calculator", "--otel",
                               "--db", str(tmp_path / "runs.db")], capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr
        received = collector.spans()
    names = sorted(name for name, _, _ in received)
    assert names == ["chat gpt-4o-mini", "chat gpt-4o-mini", "execute_tool calculator", "invoke_agent reinloop",
                     "reinloop.step", "reinloop.step"]
    assert {service.get("service.name") for _, _, service in received} == {"reinloop-test"}
    chat = next(attributes for name, attributes, _ in received if name.startswith("chat"))
    assert chat["gen_ai.provider.name"].string_value == "openai"
    assert chat["gen_ai.request.model"].string_value == "gpt-4o-mini"
    assert chat["gen_ai.usage.input_tokens"].int_value == 12
    assert list(chat["gen_ai.response.finish_reasons"].array_value.values)[0].string_value in ("tool_calls", "stop")



def otel_run(openai_server, tmp_path, *flags: str, **variables: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``reinloop run`` to the scripted server in a new process, with ``variables`` set; the process and its seconds."""
    openai_server.responses.append(completion("6"))
    env = {**os.environ, "OPENAI_API_KEY": "not-needed", **variables}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "reinloop", "run", "2*3?", "--base-url", openai_server.base_url,
                           "--db", str(tmp_path / "runs.db"), "--no-color", *flags],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc, time.monotonic() - started


def test_an_unreachable_collector_is_said_once_and_adds_no_seconds_at_exit(openai_server, tmp_path):
    closed = f"http://127.0.0.1:{free_port()}"
    _, without = otel_run(openai_server, tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=closed)
    proc, with_otel = otel_run(openai_server, tmp_path, "--otel", OTEL_EXPORTER_OTLP_ENDPOINT=closed)
    assert proc.stderr.splitlines() == [
        f"reinloop: the OpenTelemetry collector at {closed}/v1/traces could not be reached; this run's spans are "
        "dropped (OTEL_EXPORTER_OTLP_ENDPOINT says where it is, OTEL_TRACES_EXPORTER=none stops the export)"]
    assert "answer: 6" in proc.stdout
    assert with_otel - without < 5, f"--otel took {with_otel:.1f} s, without it {without:.1f} s"  # was 9-16 s more


def test_otel_traces_exporter_console_prints_the_spans_on_stderr(openai_server, tmp_path):
    proc, _ = otel_run(openai_server, tmp_path, "--otel", "--json", "-q", OTEL_TRACES_EXPORTER="console")
    assert json.loads(proc.stdout)["answer"] == "6"  # stdout keeps the run's own lines
    assert '"name": "invoke_agent reinloop"' in proc.stderr and '"name": "chat gpt-4o-mini"' in proc.stderr


def test_otel_traces_exporter_none_exports_nothing_and_an_unknown_exporter_is_named(openai_server, tmp_path):
    proc, _ = otel_run(openai_server, tmp_path, "--otel", OTEL_TRACES_EXPORTER="none",
                       OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{free_port()}")
    assert proc.stderr == ""
    bad = subprocess.run([sys.executable, "-m", "reinloop", "run", "2*3?", "--base-url", openai_server.base_url,
                          "--db", str(tmp_path / "runs.db"), "--otel"], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "OPENAI_API_KEY": "not-needed", "OTEL_TRACES_EXPORTER": "zipkin_json"})
    assert bad.returncode != 0 and bad.stdout == ""
    assert bad.stderr.splitlines() == [
        "reinloop: error: OTEL_TRACES_EXPORTER names the span exporter 'zipkin_json', which no installed package "
        "provides; choose among: console, none, otlp, otlp_proto_http"]


def reinloop_cli(command: list[str], collector: Collector, code: int) -> None:
    """Run ``reinloop COMMAND`` in a new process exporting to ``collector``; it must exit with ``code``."""
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.port}", "OPENAI_API_KEY": "not-needed"}
    proc = subprocess.run([sys.executable, "-m", "reinloop", *command], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == code, proc.stdout + proc.stderr


def test_reinloop_resume_in_a_new_process_continues_the_trace_with_a_link(openai_server, tmp_path):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "2*3"}}]),
                                completion("6")]
    db = str(tmp_path / "runs.db")
    with Collector() as collector:
        commands = [(["run", "2*3?", "--thread", "t-otel", "--model", "openai:gpt-4o-mini", "--base-url",
                      openai_server.base_url, "--tools", "calculator", "--max-steps", "1", "--otel", "--db", db], 3),
                    (["resume", "t-otel", "--extra-steps", "2", "--otel", "--db", db], 0)]
        for command, code in commands:  # each a new process (3: paused): the trace goes on through the checkpoint
            reinloop_cli(command, collector, code)
        first, second = collector.runs()
        traces = {span.trace_id for r in collector.requests for rs in r.resource_spans for ss in rs.scope_spans
                  for span in ss.spans}
    assert traces == {first.trace_id}  # the resumed part's steps and calls too
    status = {a.key: a.value for a in first.attributes}["reinloop.status"].string_value
    assert status == "paused" and {a.key: a.value for a in second.attributes}["reinloop.status"].string_value == "done"
    assert second.trace_id == first.trace_id and second.parent_span_id == first.span_id
    assert [link.span_id for link in second.links] == [first.span_id]
    assert {a.key: a.value for a in second.attributes}["reinloop.resumed"].bool_value


def test_reinloop_replay_of_a_run_recorded_with_otel_exports_nothing_unless_asked(openai_server, tmp_path):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": "2*3"}}]),
                                completion("6")]
    db = str(tmp_path / "runs.db")
    with Collector() as collector:
        exported = []
        for command in (["run", "2*3?", "--thread", "t-otel", "--model", "openai:gpt-4o-mini", "--base-url",
                         openai_server.base_url, "--tools", "calculator", "--otel", "--db", db],
                        ["replay", "t-otel", "--db", db], ["replay", "t-otel", "--otel", "--db", db]):
            reinloop_cli(command, collector, 0)
            exported.append(len(collector.runs()))
    assert exported == [1, 1, 2]  # the recorded run, nothing from the plain replay, the replay asked for with --otel


def test_an_approval_wait_ends_the_part_and_the_decision_is_an_event_of_the_step_that_goes_on(make_graph, spans):
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from reinloop.tools import configure

    @tool
    def send_mail(to: str) -> str:
        """Send a mail."""
        return f"sent to {to}"

    tools = [configure(send_mail, side_effects=True, approval=True)]
    graph = traced(make_graph, spans, [[tool_call("send_mail", {"to": "bob"}, id="m1")], "sent"], tools=tools,
                   checkpointer=InMemorySaver())
    graph.invoke({"task": "mail bob"}, THREAD)
    [call] = graph.get_state(THREAD).interrupts[0].value["calls"]
    graph.invoke(Command(resume={"decisions": {call["id"]: "approve"}}), THREAD)
    first, second = named(spans[1], "invoke_agent reinloop")
    assert first.attributes["reinloop.status"] == "waiting_for_approval" and second.attributes["reinloop.status"] == "done"
    waiting, resumed, last = named(spans[1], "reinloop.step")
    assert waiting.attributes["reinloop.step.unfinished"] is True and resumed.attributes["reinloop.first_node"] == "approve"
    assert [(e.attributes["gen_ai.tool.call.id"], e.attributes["reinloop.approval.id"], e.attributes["reinloop.approval.action"])
            for e in resumed.events if e.name == "reinloop.approval"] == [("m1", call["id"], "approve")]
    assert children(spans[1], resumed) == ["execute_tool send_mail"]
