"""Fixtures for memory tests: a report of pages, one fact on page 2, and a fresh token counter."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import tool

from reinloop.protocols.memory import tokens
from reinloop.testing import tool_call

FILLER = "Nothing important here, just filler text about the weather. "
FACT = "The vault code is 4711."


def page_text(page: int) -> str:
    """About 600 characters; page 2 holds the fact."""
    head = f"Page {page}. {FACT} " if page == 2 else f"Page {page}. "
    return head + FILLER * 10


@tool
def read_page(page: int) -> str:
    """Read one page of the report."""
    return page_text(page)


def reads(pages: range, protocol: str = "tool_calling") -> list[Any]:
    """Scripted replies that read each page, in the protocol's format."""
    if protocol == "json":
        return [{"thought": f"read page {p}", "tool": "read_page", "args": {"page": p}} for p in pages]
    if protocol == "react":
        return [f'Thought: read page {p}\nAction: read_page\nArgs: {{"page": {p}}}' for p in pages]
    return [[tool_call("read_page", {"page": p})] for p in pages]


@pytest.fixture
def fresh_counter():
    """Forget the chosen token counter before and after the test (it is cached per process)."""
    tokens.chosen_counter.cache_clear()
    yield
    tokens.chosen_counter.cache_clear()
