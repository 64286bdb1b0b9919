"""The demo graph as a module-level object, for ``langgraph dev`` and LangGraph's API server.

``langgraph.json`` at the repository root points at :data:`graph`, so::

    LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true langgraph dev --no-browser

serves the loop offline on 127.0.0.1:2024, where ``langgraph_sdk`` clients
create threads, run, interrupt and resume it; ``reinloop-approvals`` is the
same loop with ``get_weather`` waiting for approval, answered through the
server's interrupt API. The server supplies the
checkpointer. The model is scripted, so the server needs no key and no
network; unlike a fixed script it never runs out: :class:`PlanningChatModel`
plans each reply from the task and the results so far (look up the weather of
each city named, compute the arithmetic in the task, then answer).
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from ..graph import build_graph
from ..runs.limits import Limits
from ..runs.spec import RunSpec
from ..testing import ScriptedChatModel, tool_call
from ..tools.catalog import builtins
from ..tools.demo import DEMO_WEATHER

ARITHMETIC = re.compile(r"[\d.]+(?:\s*[-+*/]\s*\(*\s*[\d.]+\s*\)*)+|\([\d.\s+\-*/()]+\)[\d.\s+\-*/()]*")


def planned_calls(task: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a task asks for: the weather of each city it names, then its arithmetic."""
    calls: list[tuple[str, dict[str, Any]]] = [("get_weather", {"city": c}) for c in DEMO_WEATHER if c in task]
    calls += [("calculator", {"expression": m.group().strip()}) for m in ARITHMETIC.finditer(task)]
    return calls


def plan(messages: list[BaseMessage]) -> Any:
    """The next reply: the first planned call not made yet, else an answer from the observations."""
    task = next((str(m.content)[len("Task: "):] for m in reversed(messages)
                 if isinstance(m, HumanMessage) and str(m.content).startswith("Task: ")), "")
    made = [(c["name"], c["args"]) for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    for name, args in planned_calls(task):
        if (name, args) not in made:
            return [tool_call(name, args)]
    seen = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
    return "; ".join(seen) if seen else f"(demo model) I have no tool for this task: {task}"


class PlanningChatModel(ScriptedChatModel):
    """A scripted model whose every reply is :func:`plan` of the prompt: it never runs out."""

    def reply(self, messages: list[BaseMessage], tags: frozenset[str], options: dict[str, Any]) -> AIMessage:
        """:func:`plan` of the prompt. Prompts are not recorded: a server answers for as long as it runs."""
        return self._to_message(plan(messages), messages)


SPEC = RunSpec(tools="calculator,db_query,get_weather", limits=Limits(max_steps=8, max_seconds=60))
"""How the served loop runs (its model is :class:`PlanningChatModel`, an object beside the spec)."""

graph = build_graph(PlanningChatModel(), builtins(",".join(SPEC.tools)), spec=SPEC, name="reinloop-demo")
"""The demo loop with the planning model, as ``langgraph dev`` serves it (``langgraph.json``)."""

APPROVALS_SPEC = SPEC.replace(approve={"get_weather": True})
"""The same loop, with every ``get_weather`` call waiting for an operator's decision."""

approvals_graph = build_graph(PlanningChatModel(), builtins(",".join(SPEC.tools)), spec=APPROVALS_SPEC,
                              name="reinloop-approvals")
"""The demo loop that asks approval, served as ``reinloop-approvals``: a client answers through LangGraph's
interrupt API, ``Command(resume={"decisions": {...}})`` (``command={"resume": ...}`` in ``langgraph_sdk``)."""


WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class LocalJsonOnly:
    """ASGI middleware in front of every route ``langgraph dev`` serves (``langgraph.json``'s ``http.app``).

    The server takes approvals (a request to resume a run is an operator's decision), and bound to 127.0.0.1
    it is still reachable from any web page the operator opens. So it answers only what a program sends:
    a request from another origin (an ``Origin`` that is not the server's own host, or a browser's
    ``Sec-Fetch-Site: cross-site``/``same-site``) is refused with 403, a private-network preflight too, and a
    request with a body that is not ``application/json`` (the ``text/plain`` a page may send without a
    preflight) with 415. ``http.cors`` in ``langgraph.json`` allows no origin, so no browser reads an answer.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            refused = refusal(scope)
            if refused is not None:
                from starlette.responses import JSONResponse

                await JSONResponse({"detail": refused[1]}, status_code=refused[0])(scope, receive, send)
                return
        await self.app(scope, receive, send)


def refusal(scope: Any) -> tuple[int, str] | None:
    """Why a request is refused (status, reason), or ``None``: see :class:`LocalJsonOnly`."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
    origin, host = headers.get("origin"), headers.get("host", "")
    if origin is not None and origin.split("://", 1)[-1].rstrip("/") != host:
        return 403, f"cross-origin requests are refused (Origin {origin!r}, host {host!r})"
    if headers.get("sec-fetch-site") in ("cross-site", "same-site"):
        return 403, "cross-site requests are refused"
    if "access-control-request-private-network" in headers:
        return 403, "private-network access is refused"
    has_body = headers.get("content-length", "0") not in ("", "0") or "transfer-encoding" in headers
    if scope.get("method") in WRITES and has_body:
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            return 415, f"only application/json requests are taken, not {kind or 'a body without a type'!r}"
    return None


def _http_app() -> Any:
    from starlette.applications import Starlette
    from starlette.middleware import Middleware

    return Starlette(middleware=[Middleware(LocalJsonOnly)])


http_app = _http_app()
"""The app ``langgraph.json`` mounts (no routes): its middleware, :class:`LocalJsonOnly`, guards every route."""
