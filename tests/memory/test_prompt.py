"""Prompt assembly in a run: parts counted per step, tools only where they belong, budgets enforced."""

from __future__ import annotations

import io
import json

import pytest
from langchain_core.messages import SystemMessage
from langgraph.checkpoint.memory import InMemorySaver

from reinloop import Limits, Memory, MemoryStore, build_graph
from reinloop.cli.app import main
from reinloop.observe.console import PlainConsole
from reinloop.errors import ConfigurationError
from reinloop.protocols.memory import active_counter, count_message_tokens
from reinloop.testing import ScriptedChatModel, prompt_text
from reinloop.tools import builtins

from ..openai_server import completion
from .conftest import read_page, reads

PARTS = {"system", "tools", "history", "task", "summary", "ledger", "recall", "steps", "hints", "total"}


def test_each_step_records_the_tokens_of_each_part_of_its_prompt():
    model = ScriptedChatModel(replies=[*reads(range(1, 7)), "done"], usage=None)
    out = build_graph(model, [read_page], memory=Memory(summary_batch=3, window_steps=3)).invoke({"task": "read the report"})
    for step, prompt in zip(out["scratchpad"], model.prompts, strict=True):
        parts = step["prompt_parts"]
        assert set(parts) == PARTS
        assert parts["total"] == sum(v for k, v in parts.items() if k != "total")
        assert step["prompt_tokens"] == parts["total"]  # no usage reported: the counted prompt is used
        assert count_message_tokens(prompt, active_counter()) == parts["total"] - parts["tools"]
    assert out["scratchpad"][0]["prompt_parts"]["steps"] == 0
    assert out["scratchpad"][6]["prompt_parts"]["summary"] > 0  # step 7: steps 1-3 folded, 4-6 in the window


@pytest.mark.parametrize("protocol", ["json", "react"])
def test_text_protocols_describe_the_tools_in_the_system_prompt(protocol):
    model = ScriptedChatModel(replies=['{"final_answer": "x"}' if protocol == "json" else "Final Answer: x"])
    out = build_graph(model, builtins("calculator"), protocol=protocol).invoke({"task": "t"})
    system = model.prompts[0][0]
    assert isinstance(system, SystemMessage) and "- calculator:" in system.content
    parts = out["scratchpad"][0]["prompt_parts"]
    assert parts["tools"] == active_counter().count(build_graph(model, builtins("calculator")).reinloop_context.tools.describe())


def test_native_tool_calling_sends_schemas_not_descriptions_and_counts_them():
    model = ScriptedChatModel(replies=["x"])
    out = build_graph(model, builtins("calculator")).invoke({"task": "t"})
    assert "- calculator:" not in model.prompts[0][0].content
    assert model.bound_tools[0]["function"]["name"] == "calculator"
    tools = out["scratchpad"][0]["prompt_parts"]["tools"]
    assert tools == active_counter().count(json.dumps(model.bound_tools, ensure_ascii=False, separators=(",", ":")))


@pytest.mark.parametrize("protocol", ["auto", "json", "react"])
def test_without_a_system_prompt_the_system_message_is_the_protocols_rules_alone(protocol):
    # A persona sentence of reinloop's own before the rules turned a 1.5B model's native calls into prose.
    reply = {"json": '{"final_answer": "x"}', "react": "Final Answer: x"}.get(protocol, "x")
    model = ScriptedChatModel(replies=[reply])
    graph = build_graph(model, builtins("calculator"), protocol=protocol)
    graph.invoke({"task": "t"})
    ctx = graph.reinloop_context
    assert model.prompts[0][0].content == ctx.protocol.instructions(ctx.tools)


def test_a_given_system_prompt_comes_first_and_the_protocols_rules_after_it():
    model = ScriptedChatModel(replies=["x"])
    graph = build_graph(model, builtins("calculator"), system_prompt="  Answer in French.  ")
    graph.invoke({"task": "t"})
    ctx = graph.reinloop_context
    assert model.prompts[0][0].content == f"Answer in French.\n\n{ctx.protocol.instructions(ctx.tools)}"


def test_a_budget_the_system_prompt_fills_is_refused_with_the_fix():
    with pytest.raises(ConfigurationError, match=r"leave less than 200 of Memory.max_prompt_tokens=250 for the task "
                                                 r"and the steps; raise max_prompt_tokens to at least \d+"):
        build_graph(ScriptedChatModel(), builtins("calculator,db_query,get_weather"), protocol="json",
                    memory=Memory(max_prompt_tokens=250))


def test_a_task_longer_than_the_budget_is_refused_before_the_model_is_called_never_cut():
    from reinloop.errors import TaskTooLargeError

    model = ScriptedChatModel(replies=["ok"], usage=None)
    task = "开头 " + "很长的任务描述 " * 2000 + " 结尾"
    with pytest.raises(TaskTooLargeError, match=r"the task is [\d,]+ tokens \(tiktoken:o200k_base\): .* more than the "
                                                r"prompt budget Memory.max_prompt_tokens=1,000; .*raise it to at least \d+") as info:
        build_graph(model, memory=Memory(max_prompt_tokens=1000)).invoke({"task": task})
    error = info.value
    assert error.task_tokens > 1000 and error.budget == 1000
    assert error.needed == error.task_tokens + error.fixed_tokens + error.reserved
    assert model.prompts == []


def test_a_task_that_fits_with_room_for_the_steps_is_sent_whole():
    model = ScriptedChatModel(replies=["ok"], usage=None)
    task = "开头 " + "很长的任务描述 " * 100 + " 结尾"
    out = build_graph(model, memory=Memory(max_prompt_tokens=2000)).invoke({"task": task})
    assert str(model.prompts[0][-1].content) == f"Task: {task}" and out["scratchpad"][0]["memory"] == []


def test_a_second_task_on_a_thread_sees_the_first_answer_and_summary():
    model = ScriptedChatModel(replies=[*reads(range(1, 7)), "page 2 has the code", "It was 4711"])
    graph = build_graph(model, [read_page], memory=Memory(summary_batch=3, window_steps=3), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    first = graph.invoke({"task": "Find the vault code."}, config)
    assert first["summary"].startswith("Steps 1–3: ") and "4711" in first["summary"]
    out = graph.invoke({"task": "Remind me of the code?"}, config)
    assert out["history"][0]["summary"] == first["summary"] and out["summary"] == ""
    text = prompt_text(model.prompts[-1])
    assert "Task: Find the vault code.\n  Answer: page 2 has the code\n  Summary: Steps 1–3: " in text
    assert "The vault code is 4711." in text


def test_memory_events_reach_the_custom_stream_and_the_console():
    model = ScriptedChatModel(replies=[*reads(range(1, 7)), "done"])
    graph = build_graph(model, [read_page], memory=Memory(summary_batch=3, window_steps=3))
    events = [e for e in graph.stream({"task": "read"}, stream_mode="custom")]
    decide = [e for e in events if e["node"] == "decide"]
    memory = [m for e in decide for m in e.get("memory") or []]  # memory events ride on decide's event
    assert [m["kind"] for m in memory] == ["evicted", "summarized"]
    assert memory[1]["summary"].startswith("summarized steps 1–3 (10+5 tokens): Steps 1–3: Page 1.")
    assert decide[0]["data"]["counter"] == "tiktoken:o200k_base" and set(decide[0]["data"]["prompt_parts"]) == PARTS
    out = io.StringIO()
    console = PlainConsole(Limits(), out=out)
    for event in events:
        console.handle(event)
    assert "  memory:      evicted: evicted steps 1–3 from the window (into the summary)\n" \
           "  memory:      summarized: summarized steps 1–3" in out.getvalue()


def test_memory_settings_are_checked():
    with pytest.raises(ConfigurationError, match=r"Memory.window_steps must be a positive integer, got 0; use None"):
        Memory(window_steps=0)
    with pytest.raises(ConfigurationError, match=r"Memory.fold_tokens must be a positive integer, got 0; use None"):
        Memory(fold_tokens=0)
    with pytest.raises(ConfigurationError, match=r"Memory.summary_batch must be a positive integer, got 0; use None"):
        Memory(summary_batch=0)
    with pytest.raises(ConfigurationError, match="Memory.encoding must be 'o200k_base', 'cl100k_base' or 'estimate'"):
        Memory(encoding="gpt2")
    with pytest.raises(ConfigurationError, match="unknown memory setting"):
        Memory().replace(window=3)
    with pytest.raises(ConfigurationError, match=r"RunSpec.memory must be a Memory \(or a mapping of its fields\), got str"):
        build_graph(ScriptedChatModel(), memory="window_steps=3")
    with pytest.raises(ConfigurationError, match="unknown memory setting"):
        build_graph(ScriptedChatModel(), memory={"window": 3})  # a mapping changes the named settings only


def test_memory_settings_are_plain_data_for_storage():
    settings = Memory(summary_batch=3, window_steps=2, summarizer=ScriptedChatModel()).as_dict()
    assert settings["window_steps"] == 2 and settings["summarizer"] == "ScriptedChatModel"
    assert json.loads(json.dumps(settings)) == settings


def test_full_history_replay_is_one_setting_away():
    model = ScriptedChatModel(replies=[*reads(range(1, 8)), "done"])
    replay = Memory(summary_batch=3, window_steps=None, max_prompt_tokens=None, summarize=False)
    out = build_graph(model, [read_page], memory=replay).invoke({"task": "read"})
    last = prompt_text(model.prompts[-1])
    assert all(f"Page {i}." in last for i in range(1, 8)) and not model.summary_prompts
    assert out["answer"] == "done" and all(not s["memory"] for s in out["scratchpad"])  # nothing evicted


def test_cli_run_takes_memory_flags_and_prints_the_counter(openai_server, capsys):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": f"{i}*{i}"}}])
                                for i in range(1, 5)]
    openai_server.responses += [completion("done")]
    code = main(["run", "squares", "--base-url", openai_server.base_url, "--tools", "calculator",
                 "--window-steps", "2", "--max-prompt-tokens", "3000", "--no-summarize", "--summary-batch", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "memory: last 2 steps, <= 3000 prompt tokens, no summaries, ledger <= 400 tokens, no recall; tokens counted by " \
           "tiktoken:o200k_base" in out
    assert "memory:      evicted: evicted step 1 from the window" in out
    last = openai_server.requests[-1]["messages"]
    assert sum(1 for m in last if m["role"] == "tool") == 2


def test_cli_memory_db_stores_memories_in_a_sqlite_file(openai_server, tmp_path, capsys):
    openai_server.responses += [completion(tool_calls=[{"name": "calculator", "args": {"expression": f"{i}*{i}"}}])
                                for i in range(1, 5)]
    openai_server.responses += [completion("done")]
    db = tmp_path / "memories.db"
    code = main(["run", "squares", "--base-url", openai_server.base_url, "--tools", "calculator", "--json", "--quiet",
                 "--window-steps", "2", "--summary-batch", "1", "--no-summarize", "--memory-db", str(db), "--embeddings", "hash",
                 "--memory-user", "ann"])
    assert code == 0 and json.loads(capsys.readouterr().out)["status"] == "done"
    records = MemoryStore(db).records("user:ann")
    assert [(r["first_step"], r["text"]) for r in records] == [
        (1, 'Step 1:\n  called calculator {"expression": "1*1"} -> 1'),
        (2, 'Step 2:\n  called calculator {"expression": "2*2"} -> 4')]


def test_tool_call_steps_stay_whole_through_the_openai_client(openai_server):
    """The provider sees every tool call with its result, even after steps were folded away."""
    from reinloop.models.resolve import resolve_model

    openai_server.responses += [completion(tool_calls=[{"name": "read_page", "args": {"page": i}}]) for i in range(1, 7)]
    openai_server.responses += [completion("done")]
    model = resolve_model("openai:gpt-4o-mini", base_url=openai_server.base_url)
    out = build_graph(model, [read_page], memory=Memory(summary_batch=3, window_steps=2, summarize=False)).invoke({"task": "read"})
    assert out["status"] == "done"
    for request in openai_server.requests:
        calls = [c["id"] for m in request["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        results = [m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"]
        assert calls == results


def test_building_a_graph_loads_no_encoding_until_a_prompt_is_counted(fresh_counter):
    from reinloop.protocols.memory import tokens

    graph = build_graph(ScriptedChatModel(replies=["done"]), builtins("calculator,get_weather"))
    assert tokens.chosen_counter.cache_info().currsize == 0  # the fixed parts' bytes fit the budget
    out = graph.invoke({"task": "t"})
    assert tokens.chosen_counter.cache_info().currsize == 1
    assert out["scratchpad"][0]["prompt_parts"]["total"] <= Memory().max_prompt_tokens


@pytest.mark.parametrize("system_prompt", ["Be brief.", "你是一个认真的助手，请一步一步地完成任务。" * 20, "🙂 ünïcode " * 50])
@pytest.mark.parametrize("protocol", ["tool_calling", "json", "react"])
def test_the_byte_bound_of_the_fixed_parts_is_never_below_their_exact_count(system_prompt, protocol):
    from reinloop.protocols.memory.prompt import fixed_system_tokens, fixed_upper_bound

    ctx = build_graph(ScriptedChatModel(), builtins("calculator,db_query,get_weather"), protocol=protocol,
                      system_prompt=system_prompt).reinloop_context
    for encoding in ("o200k_base", "cl100k_base", "estimate"):
        assert fixed_upper_bound(ctx) >= sum(fixed_system_tokens(ctx, active_counter(encoding)))
