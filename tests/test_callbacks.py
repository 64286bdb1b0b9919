"""Call hooks: the code making a model or tool call tells each hook of its start and of its end."""

from __future__ import annotations

from typing import Any

import pytest

from reinloop.observe.callbacks import current_node, watched


class Hook:
    """Notes what it is told, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[Any, ...]] = []

    def started(self, kind: str, node: str, name: str, **details: Any) -> int:
        self.told.append(("started", kind, node, name, details["call_id"], dict(details["request"])))
        return len(self.told)

    def ended(self, token: int, output: Any = None, error: BaseException | None = None) -> None:
        self.told.append(("ended", token, output, type(error).__name__ if error else None))


def test_each_hook_is_told_of_a_calls_start_and_its_result():
    first, second = Hook(), Hook()
    assert watched([first, second], "tool", "fetch", lambda: "page", call_id="c1", request={"temperature": 0}) == "page"
    for hook in (first, second):
        assert hook.told == [("started", "tool", "", "fetch", "c1", {"temperature": 0}), ("ended", 1, "page", None)]


def test_a_call_that_raises_is_told_with_its_error_and_still_raises():
    hook = Hook()

    def broken() -> str:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError, match="down"):
        watched([hook], "chat", "", broken)
    assert hook.told[-1] == ("ended", 1, None, "ConnectionError")


def test_without_hooks_the_call_is_made_as_it_is():
    assert watched((), "chat", "", lambda: 42) == 42


def test_the_node_a_call_runs_in_is_read_from_the_config_langgraph_set():
    from langchain_core.runnables import RunnableLambda

    seen = RunnableLambda(lambda _: current_node()).invoke(None, {"metadata": {"langgraph_node": "decide"}})
    assert seen == "decide" and current_node() == ""
