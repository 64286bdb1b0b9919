"""The ReAct text protocol (seed 002): ``Thought:`` / ``Action:`` / ``Args:`` / ``Final Answer:``.

Models in this format often keep writing past their action, inventing an
``Observation:`` and even a final answer. Everything from the first
``Observation:`` after the action is cut off: only the tool may observe.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from ..tools.bounds import clean_text
from ..state import Action, Pending, Reply, Step
from ..tools.registry import ToolRegistry
from .base import OutputProtocol, action_id, error_pending, example_call, quote, replayed_thought
from .json_protocol import coerce_args

if TYPE_CHECKING:
    from .output import AnswerSchema

# Line starts are matched with [ \t]*, never \s*: \s* crosses lines, and retried at every line start
# of a reply made of blank lines it would take quadratic time.
_THOUGHT = re.compile(r"Thought\s*:\s*(.*?)(?=^[ \t]*(?:Action|Final Answer)[ \t]*:|\Z)", re.S | re.M | re.I)
_ACTION = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*(.*)$", re.M | re.I)
_ARGS = re.compile(r"^[ \t]*(?:Args|Action Input|Arguments)[ \t]*:[ \t]*(.*)", re.S | re.M | re.I)
_FINAL = re.compile(r"Final Answer\s*:\s*(.*)", re.S | re.I)
_OBSERVATION = re.compile(r"^[ \t]*Observation[ \t]*:", re.M | re.I)
_OPENING_FENCE = re.compile(r"```[a-zA-Z]*")


def _clean_name(raw: str) -> str:
    return raw.strip().strip("`'\"*[]() ").strip()


def _clean_args(raw: str) -> str:
    text = raw.strip()
    fence = _OPENING_FENCE.match(text)
    if fence:  # string operations: a regex for the closing fence backtracks over long blank runs
        text = text[fence.end() :].strip().removesuffix("```")
    return text.strip()


class ReactProtocol(OutputProtocol):
    """Replies in the ReAct text format."""

    name = "react"

    def synthesize(self, step: Step) -> str:
        """One call in ReAct's own lines (``Thought``/``Action``/``Args``); several in the JSON form."""
        actions = step.get("actions") or []
        if len(actions) != 1:
            return super().synthesize(step)
        args = json.dumps(actions[0].get("args") or {}, ensure_ascii=False)
        return f"Thought: {replayed_thought(step)}\nAction: {actions[0].get('tool')}\nArgs: {args}"

    def instructions(self, tools: ToolRegistry, output: AnswerSchema | None = None) -> str:
        answer, shape = self.answer_rule(output, "<the answer>")
        return (
            "Answer in this exact text format.\n"
            "To use a tool:\n"
            "Thought: <your reasoning>\n"
            "Action: <tool name>\n"
            'Args: {"<argument>": "<value>"}\n'
            "Then stop and wait: the Observation will be given to you.\n"
            "When you know the answer:\n"
            "Thought: <your reasoning>\n"
            f"Final Answer: {answer}\n{shape}\n"
            f"Available tools:\n{tools.describe()}"
        )

    def example(self, tools: ToolRegistry, output: AnswerSchema | None = None) -> str:
        call = example_call(tools)
        act = (f"Thought: one short sentence\nAction: {call[0]}\nArgs: {json.dumps(call[1], ensure_ascii=False)}\n"
               "or\n") if call else ""
        answer, _ = self.answer_rule(output, "<the answer>")
        return f"{act}Thought: one short sentence\nFinal Answer: {answer}"

    def parse(self, reply: Reply) -> Pending:
        text = clean_text(reply.get("text") or "").strip()
        if not text:
            return error_pending("the reply is empty")
        action = _ACTION.search(text)
        if action:  # anything the model "observed" itself is invented
            cut = _OBSERVATION.search(text, action.end())
            text = text[: cut.start()] if cut else text
        thought_match = _THOUGHT.search(text)
        thought = thought_match.group(1).strip() if thought_match else ""
        final = _FINAL.search(text)
        if action and (not final or action.start() < final.start()):
            return self._action(text, action, thought)
        if final:
            answer = final.group(1).strip()
            if not answer:
                return error_pending('"Final Answer:" is followed by nothing', thought)
            return Pending(thought=thought, actions=[], answer=answer, parse_error=None)
        return error_pending(
            f'found neither an "Action:" line nor a "Final Answer:" line in: {quote(text)!r}', thought
        )

    def _action(self, text: str, match: re.Match[str], thought: str) -> Pending:
        name = _clean_name(match.group(1))
        if not name:
            return error_pending('"Action:" is followed by no tool name', thought)
        args_match = _ARGS.search(text, match.end())
        args, raw = coerce_args(_clean_args(args_match.group(1)) if args_match else None)
        act = Action(id=action_id(1, name, args), tool=name, args=args)
        if raw:
            act["raw_args"] = raw
        return Pending(thought=thought, actions=[act], answer=None, parse_error=None)

    def repair_message(self, problem: str) -> str:
        return (
            f"Your last reply could not be used: {problem}. Reply again in the format "
            '"Thought: ...\\nAction: <tool>\\nArgs: {...}" or "Thought: ...\\nFinal Answer: ...".'
        )
