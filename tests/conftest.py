"""Shared fixtures: a graph around a scripted model, and a local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool

from reinloop import Limits, build_graph
from reinloop.graph import ReinloopGraph
from reinloop.testing import ScriptedChatModel
from reinloop.tools import builtins

from .openai_server import OpenAIServer

MakeGraph = Callable[..., tuple[ReinloopGraph, ScriptedChatModel]]


@pytest.fixture
def make_graph() -> MakeGraph:
    """Build a graph around a ScriptedChatModel: ``graph, model = make_graph(replies, ...)``."""

    def make(
        replies: Sequence[Any],
        *,
        protocol: str = "tool_calling",
        limits: Limits | None = None,
        tools: Sequence[BaseTool] | None = None,
        **kwargs: Any,
    ) -> tuple[ReinloopGraph, ScriptedChatModel]:
        model = ScriptedChatModel(replies=list(replies))
        graph = build_graph(
            model,
            tools if tools is not None else builtins("calculator,db_query,get_weather"),
            protocol=protocol,
            limits=limits,
            **kwargs,
        )
        return graph, model

    return make


@pytest.fixture(autouse=True)
def run_db(tmp_path, monkeypatch) -> Path:
    """Every test's run database is a fresh file in its tmp dir (``$REINLOOP_DB``), never ./reinloop.db."""
    path = tmp_path / "reinloop.db"
    monkeypatch.setenv("REINLOOP_DB", str(path))
    return path


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1; queue replies on ``.responses``."""
    with OpenAIServer() as server:
        yield server
