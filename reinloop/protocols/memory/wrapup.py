"""The prompt of a wrap-up call: the task and every tool result, and a request for the answer, no tools.

A stuck run (see :mod:`reinloop.protocols.answers`) gets one call in which the model can
do nothing but answer. Its prompt is short and plain on purpose: the system
rules, the answer format of the run's protocol, the task, the run's tool
results verbatim (the ledger's lines, oldest first, as many as the budget
holds, newest kept), and one request. None of the model's earlier replies are
in it: a small model that looped on a call copies its own last reply when it
sees it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from .config import Memory
from .ledger import newest_lines_within
from .prompt import fit_listing, system_text
from .tokens import active_counter, count_message_tokens
from .window import current_steps

RESULTS_HEADER = "Results of the tools called for this task, verbatim:"
REQUEST = (
    "Give the final answer to the task now, from these results. Tools are no longer available: "
    "do not call or mention one. If the results do not hold the whole answer, give the best answer they support."
)

ANSWER_FORMATS = {
    "json": 'Reply with exactly one JSON object: {"final_answer": "<the answer>"}',
    "react": "Reply with one line: Final Answer: <the answer>",
}
"""How the answer is asked for in each text protocol; native tool calling takes plain text."""


def answer_format(protocol_name: str) -> str:
    """The line that says how to write the answer in ``protocol_name``."""
    return ANSWER_FORMATS.get(protocol_name, "Reply with the final answer as plain text: a sentence or two.")


def wrap_up_prompt(state: Mapping[str, Any], ctx: Any, protocol_name: str) -> tuple[list[BaseMessage], int]:
    """The wrap-up call's messages and their token count (the ledger's newest lines that fit the budget)."""
    system = SystemMessage(content=system_text(ctx, answer_format(protocol_name)))
    return results_prompt(state, ctx, system, REQUEST)


def results_prompt(state: Mapping[str, Any], ctx: Any, system: BaseMessage, request: str) -> tuple[list[BaseMessage], int]:
    """``system``, the task, the run's tool results verbatim (newest kept within the budget) and ``request``:
    a prompt with none of the model's own replies in it, and its token count."""
    memory: Memory = getattr(ctx, "memory", None) or Memory()
    counter = active_counter(memory.encoding)
    head: list[BaseMessage] = [system, HumanMessage(content=f"Task: {state['task']}")]
    last = HumanMessage(content=request)
    fixed = count_message_tokens([*head, last], counter)
    room = float("inf") if memory.max_prompt_tokens is None else max(0, memory.max_prompt_tokens - fixed)
    lines = newest_lines_within(current_steps(state), [], room, counter, str(state.get("task") or ""))
    listing, tokens = fit_listing(RESULTS_HEADER, lines, room, counter)
    messages = [*head, *([listing] if listing is not None else []), last]
    return messages, fixed + tokens
