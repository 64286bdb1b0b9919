"""The BFCL tier: BFCL's own items and checkers, a seeded sample, and every contestant judged as BFCL judges.

The tests that load BFCL's data or run its checkers skip, with the install command, without bfcl-eval.
"""

from __future__ import annotations

import ast
import json

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from benchmarks.eval import bfcl
from benchmarks.eval.__main__ import main
from benchmarks.eval.contestants import agent_for
from benchmarks.eval.textcalls import text_calls
from reinloop.testing import ScriptedChatModel, tool_call


def _installed() -> bool:
    try:
        bfcl.bfcl()
    except bfcl.BfclUnavailable:
        return False
    return True


needs_bfcl = pytest.mark.skipif(not _installed(), reason=f"bfcl-eval is not installed: {bfcl.INSTALL}")
CATEGORIES = ["simple_python", "multiple", "parallel", "multi_turn_base"]


def first_option(options: list) -> object:
    """The first value BFCL's ground truth allows for a parameter, with nested dicts' parameters resolved too."""
    return resolved(options[0])


def resolved(value: object) -> object:
    if isinstance(value, dict):
        return {k: first_option(v) for k, v in value.items() if v[0] != ""}
    if isinstance(value, list):
        return [resolved(v) for v in value]
    return value


def expected_calls(item: bfcl.Item) -> list[list[tuple[str, dict]]]:
    """The ground truth's calls per turn, as (tool name shown to the model, arguments)."""
    if not item.multi_turn:
        return [[(name.replace(".", "_"), resolved(params)) for call in item.answer for name, params in call.items()]]
    order = {f["name"]: list(f["parameters"]["properties"]) for f in item.entry["function"]}
    turns = []
    for turn in item.answer:
        calls = []
        for text in turn:  # BFCL writes them as Python calls: "mv(source='a.pdf', destination='temp')"
            node = ast.parse(text, mode="eval").body
            args = {order[node.func.id][i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
            calls.append((node.func.id, {**args, **{k.arg: ast.literal_eval(k.value) for k in node.keywords}}))
        turns.append(calls)
    return turns


def reply(contestant: str, calls: list[tuple[str, dict]]) -> object:
    """One reply making ``calls`` in the contestant's format (one call a reply where the protocol says so)."""
    if contestant in ("reinloop", "reinloop_auto", "create_agent"):
        return [tool_call(name, args) for name, args in calls]
    if contestant == "create_agent_text_calls":
        return "I will call: " + " ".join(json.dumps({"name": n, "arguments": a}) for n, a in calls)
    name, args = calls[0]  # the JSON and ReAct protocols: "Call one tool at a time"
    if contestant in ("reinloop_json", "reinloop_json_strict"):
        return {"thought": "call it", "tool": name, "args": args}
    return f"Thought: call it\nAction: {name}\nArgs: {json.dumps(args)}"


def final(contestant: str) -> object:
    answer = {"thought": "done", "final_answer": "Done."}
    return {"json": answer, "json_strict": answer, "react": "Final Answer: Done."}.get(
        contestant.removeprefix("reinloop_"), "Done.")


def script(contestant: str, item: bfcl.Item, turns: list[list[tuple[str, dict]]] | None = None) -> list[object]:
    """What the scripted model says: the calls of a single-turn item at once; a conversation's one at a time."""
    turns = turns or expected_calls(item)
    if not item.multi_turn:
        return [reply(contestant, turns[0])]
    return [r for calls in turns for r in [*(reply(contestant, [c]) for c in calls), final(contestant)]]


@pytest.fixture(scope="module")
def items() -> list[bfcl.Item]:
    return bfcl.sample(CATEGORIES, 2, seed=1)


@needs_bfcl
def test_the_sample_is_the_same_for_a_seed_and_another_for_another_seed():
    first = [i.id for i in bfcl.sample(["simple", "parallel"], 5, seed=3)]
    assert first == [i.id for i in bfcl.sample(["simple_python", "parallel"], 5, seed=3)]
    assert first != [i.id for i in bfcl.sample(["simple", "parallel"], 5, seed=4)]
    assert [i.split("_")[0] for i in first] == ["simple"] * 5 + ["parallel"] * 5
    numbers = [int(i.rsplit("_", 1)[1]) for i in first[:5]]
    assert numbers == sorted(numbers)  # in the dataset's order


@needs_bfcl
def test_an_unknown_category_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown category irrelevance; choose from simple, simple_python"):
        bfcl.categories("simple,irrelevance")


@needs_bfcl
def test_the_ast_checker_is_bfcls_own_and_tells_a_right_call_from_a_wrong_one():
    b = bfcl.bfcl()
    assert b.ast_checker.__module__ == "bfcl_eval.eval_checker.ast_eval.ast_checker"
    item = next(i for i in bfcl.sample(["simple"], 400, seed=1) if i.id == "simple_python_0")  # a triangle's area
    assert item.answer == [{"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", ""]}}]
    recorder = bfcl.Recorder(item)
    recorder.call("calculate_triangle_area", {"base": 10, "height": 5})
    assert bfcl.check(item, recorder) == (True, "")
    recorder.turns = [[{"calculate_triangle_area": {"base": 10, "height": 6}}]]
    assert bfcl.check(item, recorder) == (False, "value_error:others: Invalid value for parameter 'height': 6. "
                                                 "Expected one of [5].")
    recorder.turns = [[]]
    assert bfcl.check(item, recorder) == (False, "no call: none ran after the first reply "
                                                 "(it made none, or they were refused)")


@needs_bfcl
def test_dotted_function_names_are_shown_with_underscores_and_checked_under_bfcls_names(items):
    multiple = next(i for i in bfcl.sample(["multiple"], 200, seed=1) if i.id == "multiple_0")
    tools = bfcl.tools_for(multiple, bfcl.Recorder(multiple))
    assert "triangle_properties_get" in [t.name for t in tools]  # BFCL's triangle_properties.get
    assert all(t.args_schema["type"] == "object" for t in tools)  # BFCL's "dict", as its OpenAI handler sends it


@needs_bfcl
@pytest.mark.parametrize("contestant", bfcl.CONTESTANTS)
def test_each_contestant_is_judged_by_bfcl_on_two_items_of_each_category(contestant, items):
    verdicts = {}
    for item in items:
        outcome = bfcl.run_item(contestant, item, ScriptedChatModel(replies=script(contestant, item)))
        assert outcome.run.ending != "crash", outcome.run.detail
        verdicts[item.id] = outcome.correct
    one_call_a_reply = contestant in ("reinloop_json", "reinloop_json_strict", "reinloop_react")
    # the JSON and ReAct protocols make one call a reply: a parallel item's first reply holds one of its calls
    assert verdicts == {i.id: not (one_call_a_reply and i.category == "parallel") for i in items}


@needs_bfcl
@pytest.mark.parametrize("contestant", ["reinloop", "create_agent_text_calls"])
def test_a_wrong_value_or_a_missing_call_fails_in_every_category(contestant, items):
    for item in items[::2]:
        turns = expected_calls(item)
        if item.multi_turn:
            turns[-1] = turns[-1][:-1]  # the last turn's last call never made
        else:
            name, args = turns[0][0]
            key = next(iter(args))
            turns[0][0] = (name, {**args, key: {"a wrong": "value"}})  # no BFCL parameter takes this object
        outcome = bfcl.run_item(contestant, item, ScriptedChatModel(replies=script(contestant, item, turns)))
        assert not outcome.correct and outcome.error, item.id
        if item.multi_turn:
            continue
        ran = [call[name] for call in outcome.calls[0] if name in call]
        if contestant == "reinloop":  # validate refused it: it never ran, and the record says why
            assert turns[0][0][1] not in ran and "(refused: invalid arguments for" in outcome.run.detail
        else:  # create_agent runs it, BFCL refuses it
            assert turns[0][0][1] in ran


@needs_bfcl
def test_the_one_step_limit_of_a_single_turn_item_leaves_reinloops_first_prompt_as_it_is(items):
    from reinloop import build_graph

    item = items[0]
    capped = ScriptedChatModel(replies=script("reinloop", item))
    bfcl.run_item("reinloop", item, capped)
    free = ScriptedChatModel(replies=[*script("reinloop", item), "Done."])
    build_graph(free, bfcl.tools_for(item, bfcl.Recorder(item))).invoke({"task": bfcl.user_text(item.turns[0])})
    assert [(m.type, m.content) for m in capped.prompts[0]] == [(m.type, m.content) for m in free.prompts[0]]
    assert len(free.prompts) == 2 and len(capped.prompts) == 1


@needs_bfcl
def test_a_conversation_runs_on_bfcls_backends_so_the_model_reads_real_results(items):
    item = next(i for i in items if i.multi_turn)
    model = ScriptedChatModel(replies=script("reinloop", item))
    outcome = bfcl.run_item("reinloop", item, model)
    assert outcome.correct and len(outcome.calls) == len(item.answer)
    results = [m.content for prompt in model.prompts for m in prompt if m.type == "tool"]
    assert results and '{"status": "ok"}' not in results


@needs_bfcl
def test_the_cli_reports_each_contestant_per_category_with_an_interval(openai_server, tmp_path, capsys):
    from tests.openai_server import completion

    item = bfcl.sample(["simple"], 1, seed=5)[0]
    (name, args), = expected_calls(item)[0]
    openai_server.responses += [completion(tool_calls=[{"name": name, "args": args}])] * 2
    saved = tmp_path / "runs.jsonl"
    assert main(["--bfcl", "simple", "--n", "1", "--seed", "5", "--contestants", "reinloop,create_agent",
                 "--model", "openai:test-model", "--base-url", openai_server.base_url, "--json",
                 "--save", str(saved)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["items"] == [item.id] and report["bfcl_eval"] == bfcl.BFCL_VERSION
    for numbers in report["categories"]["simple_python"].values():
        assert numbers["correct"] == 1 and numbers["n"] == 1 and numbers["requests_per_item"] == 1
        assert numbers["interval_95"] == [0.2065, 1.0]  # Wilson's 95% interval of 1 in 1
        assert numbers["prompt_tokens_per_item"] == 12 and numbers["completion_tokens_per_item"] == 7
    lines = [json.loads(line) for line in saved.read_text().splitlines()]
    assert [(r["item"], r["contestant"], r["correct"]) for r in lines] == [(item.id, "reinloop", True),
                                                                           (item.id, "create_agent", True)]
    assert lines[0]["calls"] == [[{name: args}]]
    lines[1]["calls"] = [[]]  # as if create_agent had made no call: the report judges the calls saved
    saved.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["--report-from", str(saved)]) == 0
    table = capsys.readouterr().out
    assert "| simple_python | reinloop | 1/1 | 21–100% | 1.0 | 12 + 7 |" in table
    assert "| simple_python | create_agent | 0/1 | 0–79% |" in table


def test_bfcl_needs_a_real_model(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--bfcl", "simple"])
    assert exit_.value.code == 2
    assert "--bfcl needs a real model: --real NAME, or --model" in capsys.readouterr().err


def test_the_wilson_interval():
    assert bfcl.wilson(0, 0) == (0.0, 1.0)
    low, high = bfcl.wilson(27, 30)
    assert round(low, 3) == 0.744 and round(high, 3) == 0.965


def test_the_text_call_middleware_reads_a_call_written_as_json_text_as_a_tool_call():
    ran = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    model = ScriptedChatModel(replies=['Sure.\n```json\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n```', "5"])
    out = agent_for(model, [add], system_prompt=None, text_calls=True).invoke({"messages": [("user", "2+3?")]})
    assert ran == [(2, 3)]
    asked = next(m for m in out["messages"] if isinstance(m, AIMessage))
    assert [(c["name"], c["args"]) for c in asked.tool_calls] == [("add", {"a": 2, "b": 3})]
    ran.clear()
    model = ScriptedChatModel(replies=['{"name": "add", "arguments": {"a": 2, "b": 3}}'])
    agent_for(model, [add], system_prompt=None).invoke({"messages": [("user", "2+3?")]})
    assert ran == []  # without the middleware, the same text is an answer


def test_text_calls_reads_several_calls_and_only_calls_of_given_tools():
    text = ('<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call> and '
            '{"name": "f", "parameters": "{\\"x\\": 2}"}'
            ' [{"name": "g", "args": {}}] {"name": "unknown", "arguments": {}} {"tool_call": {"name": "g"}}')
    assert [(c["name"], c["args"]) for c in text_calls(text, {"f", "g"})] == [
        ("f", {"x": 1}), ("f", {"x": 2}), ("g", {}), ("g", {})]
    assert text_calls("The answer is {not json} 42.", {"f"}) == []
