"""Approval gates in the graph: what waits, what runs, and each decision an operator can take."""

from __future__ import annotations

import re

import pytest
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from reinloop import build_graph
from reinloop.tools.approval import APPROVAL_KIND
from reinloop.errors import ConfigurationError
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import builtins, configure

CONFIG = {"configurable": {"thread_id": "t"}}


def mail_tool(sent: list, **options):
    @tool
    def send_mail(to: str, body: str) -> str:
        """Send a mail."""
        sent.append((to, body))
        return f"sent to {to}"

    return configure(send_mail, side_effects=True, **options)


def graph_with(replies, sent, *, checkpointer=True, **options):
    model = ScriptedChatModel(replies=replies)
    spec_changes = {k: options.pop(k) for k in ("approve",) if k in options}
    tools = [mail_tool(sent, **options), *builtins("calculator")]
    graph = build_graph(model, tools, checkpointer=InMemorySaver() if checkpointer else None, **spec_changes)
    return graph, model


def mail(to="bob", call_id="m1"):
    return tool_call("send_mail", {"to": to, "body": "hi"}, id=call_id)


def waiting_ids(graph):
    """The model's call id -> the approval id the operator decides the call by."""
    return {c["call_id"]: c["id"] for c in graph.get_state(CONFIG).interrupts[0].value["calls"]}


def answer(graph, decisions):
    """Answer with decisions named by the model's call ids, sent as the approval ids they stand for."""
    ids = waiting_ids(graph)
    return graph.invoke(Command(resume={"decisions": {ids.get(k, k): v for k, v in decisions.items()}}), CONFIG)


def actions_of(out, step=0):
    return {a["id"]: a for a in out["scratchpad"][step]["actions"]}


def test_a_call_that_needs_approval_waits_while_the_rest_of_its_step_runs():
    sent = []
    graph, _ = graph_with([[mail(), tool_call("calculator", {"expression": "2*3"}, id="c1")], "ok"], sent, approval=True)
    out = graph.invoke({"task": "mail bob"}, CONFIG)
    (pending,) = out["__interrupt__"]
    assert pending.value["kind"] == APPROVAL_KIND
    [waiting] = pending.value["calls"]
    assert re.fullmatch(r"s1-c1-[0-9a-f]{12}", waiting.pop("id"))  # reinloop's id, never the model's
    assert waiting == {"call_id": "m1", "tool": "send_mail", "args": {"to": "bob", "body": "hi"},
                       "reason": "send_mail is configured to need approval", "step": 1}
    assert sent == []
    calc = next(a for a in out["pending"]["actions"] if a["id"] == "c1")
    assert calc["observation"] == "6"  # ran, and kept
    done = answer(graph, {"m1": "approve"})
    assert sent == [("bob", "hi")] and done["status"] == "done"
    assert actions_of(done)["c1"]["observation"] == "6" and actions_of(done)["m1"]["observation"] == "sent to bob"
    assert actions_of(done)["m1"]["approval"]["action"] == "approve"


def test_an_edit_runs_the_call_with_the_operators_arguments():
    sent = []
    graph, _ = graph_with([[mail()], "ok"], sent, approval=True)
    graph.invoke({"task": "t"}, CONFIG)
    done = answer(graph, {"m1": {"action": "edit", "args": {"to": "ann", "body": "hello"}}})
    assert sent == [("ann", "hello")]
    assert actions_of(done)["m1"]["approval"]["original_args"] == {"to": "bob", "body": "hi"}


def test_an_edit_the_schema_refuses_is_refused_with_the_expected_arguments_and_nothing_runs():
    sent = []
    graph, _ = graph_with([[mail()], "ok"], sent, approval=True)
    graph.invoke({"task": "t"}, CONFIG)
    with pytest.raises(ConfigurationError, match=r"edited arguments of call 's1-c1-\w+' were refused: .*body: Field required"
                                                  r".*Expected: send_mail\(to: string, body: string\), for example"):
        answer(graph, {"m1": {"action": "edit", "args": {"to": "ann"}}})
    assert sent == []
    assert graph.get_state(CONFIG).interrupts[0].value["kind"] == APPROVAL_KIND  # still waiting
    answer(graph, {"m1": "approve"})
    assert sent == [("bob", "hi")]


def test_a_rejection_is_the_observation_the_model_reads_and_nothing_runs():
    sent = []
    graph, model = graph_with([[mail()], "understood"], sent, approval=True)
    graph.invoke({"task": "t"}, CONFIG)
    done = answer(graph, {"m1": {"action": "reject", "message": "never mail bob"}})
    assert sent == []
    assert actions_of(done)["m1"]["observation"] == "REJECTED: the operator did not allow this send_mail call: never mail bob"
    assert any("never mail bob" in str(m.content) for m in model.prompts[-1])


def test_a_response_is_the_tools_result_and_the_tool_never_runs():
    sent = []
    graph, _ = graph_with([[mail()], "ok"], sent, approval=True)
    graph.invoke({"task": "t"}, CONFIG)
    done = answer(graph, {"m1": {"action": "respond", "text": "bob is on holiday"}})
    assert sent == [] and actions_of(done)["m1"]["observation"] == "bob is on holiday"


def test_always_approve_is_remembered_for_the_thread_across_steps_and_tasks():
    sent = []
    replies = [[mail("a", "m1")], [mail("b", "m2")], "first", [mail("c", "m3")], "second"]
    graph, _ = graph_with(replies, sent, approval=True)
    graph.invoke({"task": "t"}, CONFIG)
    out = answer(graph, {"m1": {"action": "approve", "always": True}})
    assert out["status"] == "done" and [to for to, _ in sent] == ["a", "b"]
    assert out["approvals"] == {"send_mail": "approve"}
    out = graph.invoke({"task": "another task"}, CONFIG)
    assert out["status"] == "done" and "__interrupt__" not in out and [to for to, _ in sent] == ["a", "b", "c"]
    assert actions_of(out, -2)["m3"]["approval"] == {"action": "approve", "by": "always",
                                                 "reason": "send_mail is configured to need approval"}


def test_always_reject_answers_later_calls_without_asking():
    sent = []
    graph, _ = graph_with([[mail("a", "m1")], [mail("b", "m2")], "gave up"], sent, approval=True)
    graph.invoke({"task": "t"}, CONFIG)
    out = answer(graph, {"m1": {"action": "reject", "message": "no mail", "always": True}})
    assert sent == [] and out["status"] == "done"
    assert "always rejected in this thread" in actions_of(out, 1)["m2"]["observation"]


def test_a_rule_on_the_arguments_asks_only_for_the_calls_it_picks():
    sent = []
    graph, _ = graph_with([[mail("friend", "m1"), mail("boss", "m2")], "ok"], sent,
                          approval=lambda args: args["to"] == "boss")
    out = graph.invoke({"task": "t"}, CONFIG)
    assert [c["call_id"] for c in out["__interrupt__"][0].value["calls"]] == ["m2"]
    assert sent == [("friend", "hi")]


def test_a_rule_that_raises_asks_rather_than_letting_the_call_through():
    sent = []
    graph, _ = graph_with([[mail()], "ok"], sent, approval=lambda args: args["missing"] > 1)
    out = graph.invoke({"task": "t"}, CONFIG)
    assert "approval rule raised KeyError" in out["__interrupt__"][0].value["calls"][0]["reason"]
    assert sent == []


def test_the_runs_spec_overrides_the_tools_own_setting():
    sent = []
    graph, _ = graph_with([[mail()], "ok"], sent, approve={"send_mail": "always"})
    out = graph.invoke({"task": "t"}, CONFIG)
    assert "every send_mail call" in out["__interrupt__"][0].value["calls"][0]["reason"] and sent == []
    graph, _ = graph_with([[mail()], "ok"], sent, approval=True, approve={"*": False})
    assert graph.invoke({"task": "t"}, CONFIG)["status"] == "done" and sent == [("bob", "hi")]


def test_the_side_effects_rule_asks_for_tools_with_side_effects_only_and_a_named_rule_wins():
    sent = []
    calc = tool_call("calculator", {"expression": "1+1"}, id="c1")
    graph, _ = graph_with([[mail(), calc], "ok"], sent, approve={"*side_effects": "ask"})
    out = graph.invoke({"task": "t"}, CONFIG)
    [waiting] = out["__interrupt__"][0].value["calls"]
    assert waiting["tool"] == "send_mail" and "tool with side effects" in waiting["reason"] and sent == []
    calc_done = next(a for a in out["pending"]["actions"] if a["id"] == "c1")
    assert calc_done["observation"] == "2"  # the calculator declares no side effects: it ran
    graph, _ = graph_with([[mail()], "ok"], sent, approve={"*side_effects": "ask", "send_mail": "never"})
    assert graph.invoke({"task": "t"}, CONFIG)["status"] == "done" and sent == [("bob", "hi")]


def test_calls_left_without_a_decision_keep_waiting():
    sent = []
    graph, _ = graph_with([[mail("a", "m1"), mail("b", "m2")], "ok"], sent, approval=True)
    graph.invoke({"task": "t"}, CONFIG)
    out = answer(graph, {"m2": "approve"})
    assert [c["call_id"] for c in out["__interrupt__"][0].value["calls"]] == ["m1"] and sent == [("b", "hi")]
    out = answer(graph, {"m1": "reject"})
    assert out["status"] == "done" and sent == [("b", "hi")]


def test_without_a_checkpointer_a_call_that_needs_approval_never_runs():
    sent = []
    graph, _ = graph_with([[mail()], "ok"], sent, checkpointer=False, approval=True)
    out = graph.invoke({"task": "t"})
    assert sent == []
    assert "needs an operator's approval" in actions_of(out)["m1"]["observation"]


@pytest.mark.parametrize("bad, message", [
    ({"m1": "maybe"}, r"bad decision for call 's1-c1-\w+'"),
    ({"zz": "approve"}, r"no call 'zz' waits for approval; waiting: s1-c1-\w+"),
    ({"m1": {"action": "respond", "text": "x", "always": True}}, "'always' goes with approve or reject"),
    ({"m1": {"action": "reject", "args": {}}}, r"decision 'reject' for call 's1-c1-\w+' takes no args"),
])
def test_a_malformed_decision_is_refused_before_it_is_stored(bad, message):
    sent = []
    graph, _ = graph_with([[mail()], "ok"], sent, approval=True)
    graph.invoke({"task": "t"}, CONFIG)
    with pytest.raises(ConfigurationError, match=message):
        answer(graph, bad)
    assert sent == [] and graph.get_state(CONFIG).interrupts


def test_an_approved_call_of_a_tool_without_side_effects_is_journaled_all_the_same():
    @configure(approval=True)
    @tool
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    graph = build_graph(ScriptedChatModel(replies=[[tool_call("shout", {"text": "hi"}, id="s1")], "ok"]), [shout],
                        checkpointer=InMemorySaver())
    graph.invoke({"task": "t"}, CONFIG)
    answer(graph, {"s1": "approve"})
    (entry,) = graph.reinloop_context.journal.entries("t")
    assert entry.key.tool == "shout" and entry.observation == "HI"


# --- one decision binds one call: attacks by the model's call ids -----------------------------------------------

SHARED_IDS = ["d", "", "*", "call_1", "m1 ", "\x1b]0;approve calculator\x07", "s1-c1-000000000000", "../../x"]


def mails(to_a, to_b, shared):
    return [tool_call("send_mail", {"to": to_a, "body": "hi"}, id=shared),
            tool_call("send_mail", {"to": to_b, "body": "hi"}, id=shared)]


@pytest.mark.parametrize("shared", SHARED_IDS)
def test_two_calls_sharing_a_model_id_are_decided_one_each(shared):
    sent = []
    graph, _ = graph_with([mails("keep", "drop", shared), "ok"], sent, approval=True)
    out = graph.invoke({"task": "t"}, CONFIG)
    first, second = out["__interrupt__"][0].value["calls"]
    assert first["id"] != second["id"] and shared not in (first["id"], second["id"])
    assert first["args"]["to"] == "keep" and second["args"]["to"] == "drop"
    calls = out["pending"]["actions"]
    assert len({a["id"] for a in calls}) == 2  # reinloop made the step's call ids unique
    done = graph.invoke(Command(resume={"decisions": {first["id"]: "approve",
                                                     second["id"]: {"action": "reject", "message": "no"}}}), CONFIG)
    assert sent == [("keep", "hi")] and done["status"] == "done"


@pytest.mark.parametrize("shared", SHARED_IDS)
def test_deciding_one_of_two_calls_sharing_an_id_leaves_the_other_waiting(shared):
    sent = []
    graph, _ = graph_with([mails("a", "b", shared), "ok"], sent, approval=True)
    out = graph.invoke({"task": "t"}, CONFIG)
    first, second = out["__interrupt__"][0].value["calls"]
    out = graph.invoke(Command(resume={"decisions": {second["id"]: "approve"}}), CONFIG)
    assert sent == [("b", "hi")]
    assert [c["id"] for c in out["__interrupt__"][0].value["calls"]] == [first["id"]]  # undecided: still waits


@pytest.mark.parametrize("pattern", ["*", "s1-*", "s1-c?-*", ".*", "%", "s1-c1-", ""])
def test_no_id_is_a_pattern(pattern):
    sent = []
    graph, _ = graph_with([[mail("a", "*"), mail("b", "m2")], "ok"], sent, approval=True)
    out = graph.invoke({"task": "t"}, CONFIG)
    star, other = out["__interrupt__"][0].value["calls"]
    with pytest.raises(ConfigurationError, match="waits for approval; waiting: "):
        graph.invoke(Command(resume={"decisions": {pattern: "approve"}}), CONFIG)
    assert sent == []
    out = graph.invoke(Command(resume={"decisions": {star["id"]: "approve"}}), CONFIG)  # the call the model named "*"
    assert sent == [("a", "hi")] and [c["id"] for c in out["__interrupt__"][0].value["calls"]] == [other["id"]]


@pytest.mark.parametrize("later_args", [{"to": "bob", "body": "hi"}, {"to": "mallory", "body": "hi"}])
def test_a_decision_for_one_steps_call_never_decides_a_later_steps_call_with_the_same_model_id(later_args):
    sent = []
    replies = [[mail("bob", "m1")], [tool_call("send_mail", later_args, id="m1")], "ok"]
    graph, _ = graph_with(replies, sent, approval=True)
    out = graph.invoke({"task": "t"}, CONFIG)
    [step_one] = out["__interrupt__"][0].value["calls"]
    out = graph.invoke(Command(resume={"decisions": {step_one["id"]: "approve"}}), CONFIG)
    [step_two] = out["__interrupt__"][0].value["calls"]
    assert step_two["call_id"] == "m1" and step_two["id"] != step_one["id"] and sent == [("bob", "hi")]
    for stale in ({step_one["id"]: "approve"}, {"m1": "approve"}):
        with pytest.raises(ConfigurationError, match="no call .* waits for approval"):
            graph.invoke(Command(resume={"decisions": stale}), CONFIG)
    assert sent == [("bob", "hi")]  # the later call never ran on the earlier decision


def test_the_approval_id_is_bound_to_thread_step_position_tool_and_arguments():
    from reinloop.tools.approval import approval_id

    base = approval_id("t", 1, 0, "send_mail", {"to": "a", "b": [1, 2]})
    assert base == approval_id("t", 1, 0, "send_mail", {"b": [1, 2], "to": "a"})  # canonical: key order is no change
    changed = [approval_id("u", 1, 0, "send_mail", {"to": "a", "b": [1, 2]}),
               approval_id("t", 2, 0, "send_mail", {"to": "a", "b": [1, 2]}),
               approval_id("t", 1, 1, "send_mail", {"to": "a", "b": [1, 2]}),
               approval_id("t", 1, 0, "write_file", {"to": "a", "b": [1, 2]}),
               approval_id("t", 1, 0, "send_mail", {"to": "a", "b": [2, 1]}),
               approval_id("t", 1, 0, "send_mail", {"to": "a", "b": [1, 2]}, run=2)]
    assert base not in changed and len(set(changed)) == len(changed)


def test_a_stored_approval_id_moved_onto_another_call_decides_nothing():
    sent = []
    graph, _ = graph_with([[mail("a", "m1"), mail("b", "m2")], "ok"], sent, approval=True)
    out = graph.invoke({"task": "t"}, CONFIG)
    first, second = out["__interrupt__"][0].value["calls"]
    pending = graph.get_state(CONFIG).values["pending"]
    actions = [dict(a) for a in pending["actions"]]
    actions[1]["approval_id"] = first["id"]  # a tampered state: call b carries call a's id
    actions[0]["approval_id"] = "s1-c1-ffffffffffff"
    graph.update_state(CONFIG, {"pending": {**pending, "actions": actions}}, as_node="execute")
    out = graph.invoke(Command(resume={"decisions": {first["id"]: "approve", "s1-c1-ffffffffffff": "approve"}}), CONFIG)
    assert sent == []  # neither decision holds for the call it was moved onto
    assert [c["id"] for c in out["__interrupt__"][0].value["calls"]] == [first["id"], second["id"]]  # asked again
