"""``protocol="auto"``: one module decides when to move from tool calling to JSON to ReAct, on facts."""

from __future__ import annotations

import pytest

from reinloop.errors import ModelCallError
from reinloop.protocols import AutoProtocol, JsonProtocol, ReactProtocol, get_protocol
from reinloop.testing import ScriptedChatModel
from reinloop import build_graph
from reinloop.tools import builtins


def rejected(status: int | None, *, param: str | None = None, detail: str = "nope") -> ModelCallError:
    return ModelCallError(endpoint="http://models.local/v1", error_type="BadRequestError", detail=detail,
                          status_code=status, param=param)


@pytest.mark.parametrize("param", [None, "tools", "tool_choice"])
def test_an_endpoint_that_refuses_the_request_with_tools_moves_auto_to_json(param):
    auto = AutoProtocol()
    assert auto.after_rejection(auto, rejected(400, param=param)) == "json"
    assert auto.after_rejection(auto, rejected(422, param=param)) == "json"


@pytest.mark.parametrize(
    "error",
    [
        rejected(400, param="messages", detail="the tool message is too long"),  # another field, though it says "tool"
        rejected(401, detail="this key may not use tool calling"),
        rejected(429, detail="too many tool requests"),
        rejected(500, detail="tool backend crashed"),
        rejected(None, detail="timeout while sending tools"),
    ],
    ids=["400-other-field", "401", "429", "500", "no-status"],
)
def test_an_error_whose_text_mentions_tools_but_is_no_refusal_of_them_keeps_auto_where_it_is(error):
    auto = AutoProtocol()
    assert auto.after_rejection(auto, error) is None


def test_once_moved_to_a_text_protocol_auto_does_not_move_again_on_a_rejection():
    auto = AutoProtocol()
    assert auto.after_rejection(auto.now("json"), rejected(400)) is None


@pytest.mark.parametrize("name", ["tool_calling", "json", "react"])
def test_the_other_protocols_never_move(name):
    protocol = get_protocol(name)
    assert protocol.after_rejection(protocol, rejected(400)) is None
    assert protocol.after_unreadable(None, {"parse_error": "x"}, 9) is None  # type: ignore[typeddict-item]
    assert protocol.now("react") is protocol and protocol.without_native_tools() is None


def test_unreadable_replies_move_auto_along_the_chain_and_stop_at_react():
    auto = AutoProtocol()
    bad = {"parse_error": "no JSON object found"}
    assert auto.after_unreadable(None, bad, 1) is None  # type: ignore[arg-type]
    assert auto.after_unreadable(None, bad, 2) == "json"  # type: ignore[arg-type]
    assert auto.after_unreadable("json", bad, 2) == "react"  # type: ignore[arg-type]
    assert auto.after_unreadable("react", bad, 5) is None  # type: ignore[arg-type]
    assert auto.after_unreadable(None, {"parse_error": None}, 5) is None  # a readable step does not move it


def test_auto_keeps_one_instance_of_each_protocol_it_moves_to():
    auto = AutoProtocol()
    assert isinstance(auto.now("json"), JsonProtocol) and isinstance(auto.now("react"), ReactProtocol)
    assert auto.now("json") is auto.now("json") is auto.without_native_tools()
    assert auto.now(None) is auto


def test_a_model_that_cannot_bind_tools_starts_auto_with_its_own_json_protocol():
    auto = AutoProtocol()
    graph = build_graph(ScriptedChatModel(supports_tools=False, replies=['{"final_answer": "x"}']),
                        builtins("calculator"), protocol=auto)
    assert graph.reinloop_context.protocol is auto.now("json")
