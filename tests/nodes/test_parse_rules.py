"""The parse node's rules beyond the protocol: cut-off replies are never used; prose after a result can answer."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from reinloop import Limits
from reinloop.testing import ScriptedChatModel, cut_off, prompt_text, tool_call
from reinloop import build_graph
from reinloop.tools import builtins

CALL = {"tool": "calculator", "args": {"expression": "12*41"}}


def test_a_reply_cut_off_at_the_token_cap_is_never_the_final_answer(make_graph):
    graph, model = make_graph([cut_off("The answer is 4 and also, to explain in detail why, we"), "4"])
    out = graph.invoke({"task": "2+2?"})
    assert out["answer"] == "4" and model.calls == 2
    first = out["scratchpad"][0]
    assert first["error"] and first["answer"] is None and first["finish_reason"] == "length"
    # the cap asked for (1024), or the reply's length where the endpoint cut it shorter (the scripted reply's 5)
    assert "was cut off (finish reason 'length'; replies may be at most 5 tokens)" in first["parse_error"]
    assert out["counters"]["errors"] == 1
    assert "Write much less" in prompt_text(model.prompts[1])  # the model is asked for a shorter reply


def test_the_request_for_a_shorter_reply_asks_for_a_short_thought_only_where_the_protocol_has_one(make_graph):
    answers = {"tool_calling": "4", "json": {"final_answer": "4"}, "react": "Final Answer: 4"}
    for protocol, thought in (("tool_calling", False), ("json", True), ("react", True)):
        graph, _ = make_graph([cut_off("{\"tool\": \"calculator\", \"args\": {\"expr"), answers[protocol]],
                              protocol=protocol)
        problem = graph.invoke({"task": "2+2?"})["scratchpad"][0]["parse_error"]
        assert "Write much less: one tool call or the final answer" in problem, protocol
        assert ("thought" in problem) is thought, protocol


def test_a_cut_off_json_call_is_neither_repaired_nor_run(make_graph):
    cut = cut_off('{"thought": "multiply", "tool": "calculator", "args": {"expression": "12*4')
    graph, model = make_graph([cut, CALL, {"final_answer": "492"}], protocol="json")
    out = graph.invoke({"task": "12*41?"})
    assert out["scratchpad"][0]["actions"] == [] and out["scratchpad"][0]["error"]
    assert [a["args"] for a in out["scratchpad"][1]["actions"]] == [{"expression": "12*41"}]
    assert out["answer"] == "492"


def test_a_cut_off_reply_that_begins_with_a_whole_json_call_runs_that_call_once_and_says_so(make_graph):
    line = '{"name": "calculator", "arguments": {"expression": "12*41"}}'
    cut = cut_off("\n".join([line] * 5) + '\n{"name": "calculator", "argu')  # a small model repeating its call
    graph, model = make_graph([cut, {"final_answer": "492"}], protocol="json")
    out = graph.invoke({"task": "12*41?"})
    first = out["scratchpad"][0]
    assert [a["args"] for a in first["actions"]] == [{"expression": "12*41"}] and not first["error"]
    observation = first["actions"][0]["observation"]
    assert observation.startswith("492\n[reinloop] note: ") and out["answer"] == "492"
    assert "cut off at the output token limit after 5 whole calls" in observation
    assert "made this same call 5 times; it ran once" in observation
    assert out["counters"]["errors"] == 0 and "it ran once" in prompt_text(model.prompts[1])


READ = '{"name": "calculator", "arguments": {"expression": "2+2"}}'
NEXT = '{"name": "calculator", "arguments": {"expression": "4*3"}}'


def test_a_json_reply_listing_several_calls_runs_every_one_of_them(make_graph):
    graph, _ = make_graph([READ, READ + "\n" + NEXT, {"final_answer": "12"}], protocol="json")
    out = graph.invoke({"task": "(2+2)*3?"})
    second = out["scratchpad"][1]["actions"]
    assert [a["args"] for a in second] == [{"expression": "2+2"}, {"expression": "4*3"}]
    assert second[1]["observation"] == "12" and out["answer"] == "12"


def test_a_json_reply_of_a_thought_object_then_a_call_object_runs_the_call_with_the_thought(make_graph):
    reply = '{"thought": "multiply first"}\n{"tool": "calculator", "args": {"expression": "4*3"}}'
    graph, _ = make_graph([reply, {"final_answer": "12"}], protocol="json")
    first = graph.invoke({"task": "4*3?"})["scratchpad"][0]
    assert first["thought"] == "multiply first" and [a["args"] for a in first["actions"]] == [{"expression": "4*3"}]


def test_a_cut_native_reply_is_a_parse_error_and_calls_in_its_text_never_run(make_graph):
    cut = cut_off("\n".join([READ, READ, NEXT, READ, READ]) + '\n{"name": "calcul')
    graph, _ = make_graph([[tool_call("calculator", {"expression": "2+2"})], cut, "12"])
    out = graph.invoke({"task": "(2+2)*3?"})
    second = out["scratchpad"][1]
    assert second["actions"] == [] and "cut off" in second["parse_error"]
    assert out["answer"] == "12"


def test_native_calls_of_one_reply_all_run_those_made_before_too(make_graph):
    made = tool_call("calculator", {"expression": "2+2"})
    reply = [tool_call("calculator", {"expression": "2+2"}), tool_call("calculator", {"expression": "4*3"}),
             tool_call("get_weather", {"city": "Paris"})]
    graph, _ = make_graph([[made], reply, "12"])
    out = graph.invoke({"task": "(2+2)*3?"})
    assert [a["args"] for a in out["scratchpad"][1]["actions"]] == [{"expression": "2+2"}, {"expression": "4*3"},
                                                                   {"city": "Paris"}]
    graph, _ = make_graph([[tool_call("calculator", {"expression": "1+1"}), tool_call("calculator", {"expression": "2+2"})], "2 and 4"])
    assert len(graph.invoke({"task": "1+1 and 2+2?"})["scratchpad"][0]["actions"]) == 2


def test_a_cut_native_reply_repeating_only_calls_already_made_stays_a_failed_step(make_graph):
    cut = cut_off("\n".join([READ] * 6) + '\n{"name": "calcul')
    graph, _ = make_graph([[tool_call("calculator", {"expression": "2+2"})], cut, "4"])
    out = graph.invoke({"task": "2+2?"})
    assert out["scratchpad"][1]["actions"] == [] and out["scratchpad"][1]["error"] and out["answer"] == "4"


def test_a_cut_off_reply_whose_first_call_is_cut_still_runs_nothing(make_graph):
    pretty = cut_off('{\n  "tool": "calculator",\n  "args": {\n    "expression": "12*4')  # cut inside the call
    graph, _ = make_graph([pretty, cut_off("The answer is 492, because"), CALL, {"final_answer": "492"}],
                          protocol="json")
    out = graph.invoke({"task": "12*41?"})
    assert [s["actions"] for s in out["scratchpad"][:2]] == [[], []]
    assert [s["answer"] for s in out["scratchpad"][:2]] == [None, None] and out["answer"] == "492"


def test_cut_off_native_tool_calls_are_not_run(make_graph):
    cut = AIMessage(content="", tool_calls=[tool_call("calculator", {"expression": "1+1"})],
                    response_metadata={"finish_reason": "length"})
    graph, _ = make_graph([cut, "2"])
    out = graph.invoke({"task": "1+1?"})
    assert out["scratchpad"][0]["actions"] == [] and out["scratchpad"][0]["error"] and out["answer"] == "2"


def test_other_providers_cut_off_reasons_are_recognised(make_graph):
    anthropic = AIMessage(content="The answer is", response_metadata={"stop_reason": "max_tokens"})
    gemini = AIMessage(content="The answer is", response_metadata={"finish_reason": "MAX_TOKENS"})
    ollama = AIMessage(content="The answer is", response_metadata={"done_reason": "length"})
    graph, _ = make_graph([anthropic, gemini, ollama, "4"], limits=Limits(max_same_errors=None))
    out = graph.invoke({"task": "2+2?"})
    assert [s["error"] for s in out["scratchpad"]] == [True, True, True, False] and out["answer"] == "4"


def test_a_scripted_endpoint_with_a_cap_cuts_long_replies_and_they_are_not_used():
    model = ScriptedChatModel(replies=["x" * 400, "short"], max_tokens=50)
    graph = build_graph(model, builtins("calculator"))
    out = graph.invoke({"task": "t"})
    assert out["scratchpad"][0]["finish_reason"] == "length" and out["answer"] == "short"


def test_plain_prose_after_a_tool_result_is_the_answer_in_json_mode(make_graph):
    prose = "The calculator returned the final answer 492."
    graph, model = make_graph([CALL, prose], protocol="json")
    out = graph.invoke({"task": "What is 12*41?"})
    assert out["status"] == "done" and out["answer"] == prose and model.calls == 2
    assert out["counters"]["errors"] == 0


def test_prose_with_a_number_too_long_for_a_float_is_read_not_a_crash(make_graph):
    huge = "9" * 400  # float() gives inf, and int(inf) raises
    graph, _ = make_graph([CALL, f"Perhaps {huge}", CALL, f"It is 492, not {huge}."],
                          protocol="json", limits=Limits(max_repeats=None))
    out = graph.invoke({"task": "What is 12*41?"})
    assert out["scratchpad"][1]["parse_error"] and out["scratchpad"][1]["answer"] is None  # no result repeated
    assert out["answer"] == f"It is 492, not {huge}." and out["status"] == "done"  # repeats 492: the answer


def test_plain_prose_after_a_tool_result_is_the_answer_in_react_mode(make_graph):
    call = 'Thought: multiply\nAction: calculator\nArgs: {"expression": "12*41"}'
    graph, _ = make_graph([call, "So 12*41 = 492."], protocol="react")
    assert graph.invoke({"task": "What is 12*41?"})["answer"] == "So 12*41 = 492."


def test_prose_before_any_tool_result_is_a_parse_error(make_graph):
    graph, model = make_graph(["The answer is 492.", {"final_answer": "492"}], protocol="json")
    out = graph.invoke({"task": "What is 12*41?"})
    assert out["scratchpad"][0]["parse_error"] and model.calls == 2


def test_prose_after_a_failed_call_is_a_parse_error(make_graph):
    bad = {"tool": "calculator", "args": {"expression": "1/0"}}
    graph, model = make_graph([bad, "The result is 0.", {"final_answer": "undefined"}], protocol="json")
    out = graph.invoke({"task": "1/0?"})
    assert out["scratchpad"][1]["parse_error"] and out["answer"] == "undefined"


def test_chatter_that_announces_a_call_is_not_taken_for_the_answer(make_graph):
    chatter = ["Next I will use the calculator to add 100.", "Let me call calculator(expression='492+100').",
               "calculator(492+100)", "Action: calculator\n492+100"]
    for text in chatter:
        graph, model = make_graph([CALL, text, {"final_answer": "592"}], protocol="json")
        out = graph.invoke({"task": "12*41, then add 100"})
        assert out["scratchpad"][1]["parse_error"], text
        assert out["answer"] == "592"


def test_a_cut_off_reply_beginning_with_a_whole_side_effecting_call_runs_nothing(make_graph):
    from langchain_core.tools import tool

    from reinloop.tools import configure

    sent: list[str] = []

    @configure(side_effects=True)
    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return "sent"

    line = '{"tool": "send_email", "args": {"to": "a@example.com"}}'
    graph, _ = make_graph([cut_off(line + "\n" + '{"tool": "send_em'), {"final_answer": "not sent"}],
                          protocol="json", tools=[send_email])
    out = graph.invoke({"task": "email a"})
    assert sent == [] and out["scratchpad"][0]["actions"] == [] and "cut off" in out["scratchpad"][0]["parse_error"]
