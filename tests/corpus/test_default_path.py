"""The default path runs exactly the calls a correct model makes, refuses nothing it did right, takes its answer.

Every scenario of :mod:`tests.corpus.scenarios` runs on ``build_graph(model, tools, protocol=...)`` with no
other configuration, in each of the three protocols. A failure lists every difference
(:func:`tests.corpus.script.problems`): an argument defaulted or dropped, a result reused, a call added or
lost, a refusal, a break, an answer changed.
"""

from __future__ import annotations

import pytest

from reinloop import build_graph
from reinloop.testing import ScriptedChatModel, tool_call

from .scenarios import SCENARIOS
from .script import PROTOCOLS, problems, run_scenario
from .tools import TOOLS


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_the_default_path_runs_the_model_s_calls_as_asked_and_accepts_its_answer(scenario, protocol):
    out, model = run_scenario(scenario, protocol)
    found = problems(scenario, protocol, out, model)
    assert not found, "\n".join(found)


def test_the_corpus_has_sixty_distinct_scenarios_over_every_tool():
    ids = [s.id for s in SCENARIOS]
    assert len(ids) >= 60 and len(set(ids)) == len(ids)
    used = {t for s in SCENARIOS for t in s.tools}
    assert used <= set(TOOLS) and set(TOOLS) <= used | {c.tool for s in SCENARIOS for turn in s.turns for c in turn}


BUILTIN_NAMES = ("calculator", "db_query", "db_insert", "get_weather", "read_file", "write_file", "search_docs",
                 "sql_query", "translate")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_default_system_prompt_names_only_the_tools_the_run_has(protocol):
    tools = [TOOLS["word_count"], TOOLS["export_table"]]
    answer = {"tool_calling": "5", "json": {"final_answer": "5"}, "react": "Thought: done\nFinal Answer: 5"}[protocol]
    model = ScriptedChatModel(replies=[answer])
    out = build_graph(model, tools, protocol=protocol).invoke({"task": "How many words in 'a b c d e'?"})
    assert out["status"] == "done"
    system = str(model.prompts[0][0].content)
    assert [n for n in BUILTIN_NAMES if n in system.lower()] == []
    if protocol != "tool_calling":  # the text protocols list the tools in the prompt; native calling binds them
        assert "word_count" in system and "export_table" in system
    else:
        assert model.tools_sent[0] == ["word_count", "export_table"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_no_prompt_of_a_run_without_a_calculator_asks_for_one(protocol):
    first = {"tool_calling": [tool_call("word_count", {"text": "a b"})],
             "json": {"tool": "word_count", "args": {"text": "a b"}},
             "react": 'Thought: count\nAction: word_count\nArgs: {"text": "a b"}'}[protocol]
    answer = {"tool_calling": "2", "json": {"final_answer": "2"}, "react": "Thought: done\nFinal Answer: 2"}[protocol]
    model = ScriptedChatModel(replies=[first, answer])
    out = build_graph(model, [TOOLS["word_count"]], protocol=protocol).invoke({"task": "Count the words in 'a b'."})
    assert out["status"] == "done" and out["answer"] == "2"
    said = "\n".join(str(m.content) for prompt in model.prompts for m in prompt)
    assert "calculator" not in said.lower() and "calculation" not in said.lower()
