"""Built-in tools by name, from Python and from ``reinloop run --tools ... --sandbox/--db-tool/--docs``."""

from __future__ import annotations

import json

import pytest
import sqlite_utils

from reinloop.cli.app import main
from reinloop.errors import ConfigurationError
from reinloop.tools import BUILTINS, builtin, builtins, options_of

from ..openai_server import completion


@pytest.fixture
def places(tmp_path):
    """A sandbox, a database and a docs folder."""
    (tmp_path / "box").mkdir()
    (tmp_path / "box" / "hello.txt").write_text("hello from the sandbox", encoding="utf-8")
    sqlite_utils.Database(tmp_path / "shop.db")["users"].insert({"id": 1, "name": "张三"}, pk="id")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Alpha\nalpha beta", encoding="utf-8")
    return tmp_path


def test_every_builtin_has_a_schema_with_described_fields(places, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(places / "cache"))
    tools = builtins(",".join(BUILTINS), sandbox=places / "box", db=places / "shop.db", docs=places / "docs", db_tables="users")
    assert [t.name for t in tools] == list(BUILTINS)
    for t in tools:
        properties = t.get_input_schema().model_json_schema()["properties"]
        assert properties and all(p.get("description") for p in properties.values()), t.name


def test_exactly_the_writing_tools_declare_side_effects(places, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(places / "cache"))
    tools = builtins(",".join(BUILTINS), sandbox=places / "box", db=places / "shop.db", docs=places / "docs", db_tables="users")
    assert {t.name for t in tools if options_of(t).side_effects} == {"db_insert", "write_file"}
    assert {t.name for t in tools if not options_of(t).parallel_safe} == {"db_insert", "write_file"}


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ("read_file", r"tool 'read_file' needs a sandbox directory: give --sandbox DIR \(from Python: builtin\('read_file', root=DIR\)\)"),
        ("calculator,sql_query", r"tool 'sql_query' needs a SQLite database file: give --db-tool PATH"),
        ("db_insert", r"tool 'db_insert' needs a SQLite database file: give --db-tool PATH"),
        ("search_docs", r"tool 'search_docs' needs a folder of documents: give --docs DIR"),
    ],
)
def test_a_tool_missing_its_setting_says_which_flag_to_give(names, message):
    with pytest.raises(ConfigurationError, match=message):
        builtins(names)


def test_unknown_options_are_refused():
    with pytest.raises(ConfigurationError, match=r"bad option for built-in tool 'calculator'|takes no options"):
        builtin("calculator", precision=3)
    with pytest.raises(ConfigurationError, match=r"bad option for built-in tool 'wait': got an unexpected keyword argument 'secs'"):
        builtin("wait", secs=3)


def test_cli_tool_settings_reach_the_tools(places, openai_server, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(places / "cache"))
    openai_server.responses += [
        completion(tool_calls=[{"name": "read_file", "args": {"path": "hello.txt"}},
                               {"name": "sql_query", "args": {"query": "SELECT name FROM users"}, "id": "call_1"},
                               {"name": "search_docs", "args": {"query": "alpha"}, "id": "call_2"}]),
        completion("done"),
    ]
    code = main(["run", "look around", "--base-url", openai_server.base_url, "--json", "--quiet",
                 "--tools", "read_file,sql_query,search_docs", "--sandbox", str(places / "box"),
                 "--db-tool", str(places / "shop.db"), "--docs", str(places / "docs"),
                 "--tool-timeout", "5", "--tool-retries", "none"])
    assert code == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["answer"] == "done"
    tool_results = [m["content"] for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_results[0] == "hello from the sandbox"
    assert tool_results[1] == "name\n张三\n(1 row)"
    assert tool_results[2].startswith("- a.md — Alpha")


def test_cli_says_which_flag_a_tool_needs(capsys):
    code = main(["run", "x", "--base-url", "http://127.0.0.1:9/v1", "--tools", "calculator,read_file"])
    assert code == 2  # a usage error, said before the run header
    assert capsys.readouterr().err.strip() == (
        "reinloop: error: tool 'read_file' needs a sandbox directory: give --sandbox DIR "
        "(from Python: builtin('read_file', root=DIR))"
    )
