"""MCP tools against a real MCP server (tests/tools/mcp_server.py, the official SDK) over stdio and streamable HTTP."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("langchain_mcp_adapters")
pytestmark = pytest.mark.slow  # every test starts an MCP server process

from reinloop import ConfigurationError, DuplicateToolError, Limits, build_graph  # noqa: E402
from reinloop.runs.api import open_db, run, show_run  # noqa: E402
from reinloop.testing import ScriptedChatModel, tool_call  # noqa: E402
from reinloop.tools import Place, ToolCall, ToolExecutor, ToolJournal, builtins, mcp, options_of  # noqa: E402
from reinloop.tools import configure  # noqa: E402
from reinloop.tools.mcpclient import config_of, hint_options  # noqa: E402

from ..local_net import free_port  # noqa: E402

SERVER = Path(__file__).with_name("mcp_server.py")
AGENT = Path(__file__).with_name("mcp_agent.py")


def stdio_config(tmp_path: Path, **env: str) -> dict:
    return {"mcpServers": {"notes": {"command": sys.executable, "args": [str(SERVER)],
                                     "env": {"NOTES_FILE": str(tmp_path / "notes.txt"), **env}}}}


def notes(tmp_path: Path) -> list[str]:
    path = tmp_path / "notes.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def actions(db: Path, thread: str) -> list[dict]:
    return [a for step in show_run(thread, db).steps for a in step.get("actions") or []]


def running(pid: int) -> bool:
    """Is process ``pid`` alive (a zombie waiting for its parent's wait() is not)?"""
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except FileNotFoundError:
        return False


def start_http(port: int, tmp_path: Path) -> subprocess.Popen:
    env = {**os.environ, "NOTES_FILE": str(tmp_path / "notes.txt")}
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("the HTTP MCP server did not start")


@pytest.fixture
def stdio_tools(tmp_path):
    with mcp(stdio_config(tmp_path)) as tools:
        yield tools


@pytest.fixture
def http_server(tmp_path):
    port = free_port()
    procs = [start_http(port, tmp_path)]
    yield port, procs
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)


def test_the_servers_hints_set_each_tools_options(stdio_tools):
    got = {t.name: (options_of(t).side_effects, options_of(t).parallel_safe, options_of(t).retries) for t in stdio_tools}
    assert got["lookup"] == (False, True, None)  # readOnlyHint: parallel, journal-free, retried with the run's retries
    assert got["add_note"] == (True, False, 0)  # destructiveHint: journaled, never retried
    assert got["set_flag"] == (True, False, None)  # idempotentHint: journaled, retried
    assert got["calculator"] == (True, False, 0)  # no hints: the spec's defaults, destructive
    cacheable = {t.name for t in stdio_tools if options_of(t).cacheable}
    assert cacheable == {"unit_price"}  # readOnlyHint and idempotentHint; one of them alone (lookup, set_flag) is not


def test_a_repeat_of_a_tool_with_both_hints_is_reused_and_of_a_read_only_one_runs_again(tmp_path, stdio_tools):
    price, count = tool_call("unit_price", {"item": "apple"}), tool_call("price_calls", {})
    model = ScriptedChatModel(replies=[[price], [price], [count], [count], "30 cents"])
    outcome = run("price of an apple", db=tmp_path / "runs.db", model=model, tools=stdio_tools, thread_id="t")
    assert outcome.status == "done"
    done = actions(tmp_path / "runs.db", "t")
    assert done[1]["reused"] == 1 and "reused because unit_price is declared cacheable" in done[1]["observation"]
    assert [a.get("reused") for a in done[2:]] == [None, None]  # read-only alone: price_calls ran twice
    assert [a["observation"] for a in done[2:]] == ["1", "1"]  # the server saw one unit_price call


def test_the_user_overrides_a_tools_options_by_name(tmp_path):
    config = stdio_config(tmp_path)
    config["reinloop"] = {"tools": {"calculator": {"side_effects": False, "parallel_safe": True}}}
    with mcp(config, options={"lookup": {"timeout": 3, "cacheable": True}}) as tools:
        by_name = {t.name: t for t in tools}
        assert (options_of(by_name["calculator"]).side_effects, options_of(by_name["calculator"]).parallel_safe) == (False, True)
        assert options_of(by_name["lookup"]).timeout == 3 and options_of(by_name["lookup"]).cacheable
        configure(by_name["add_note"], timeout=7)  # as for any tool: a resume sets it again
        configure(by_name["unit_price"], cacheable=False)  # a server's claim of purity, overruled
        assert config_of(tools)["reinloop"]["tools"] == {"calculator": {"side_effects": False, "parallel_safe": True},
                                                        "lookup": {"timeout": 3, "cacheable": True},
                                                        "add_note": {"timeout": 7}, "unit_price": {"cacheable": False}}


def test_options_for_a_tool_no_server_offers_are_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="sets options of MCP tool.* add_notes, which no server offers"):
        mcp(stdio_config(tmp_path), options={"add_notes": {"timeout": 1}})


def test_hint_defaults_follow_the_spec_when_hints_are_missing_or_false():
    cautious = {"side_effects": True, "parallel_safe": False, "retries": 0, "cacheable": False}
    assert hint_options(None) == cautious
    assert hint_options({"readOnlyHint": False, "destructiveHint": False}) == cautious
    assert hint_options({"readOnlyHint": True, "idempotentHint": True})["cacheable"] is True
    assert hint_options({"readOnlyHint": True})["cacheable"] is False
    assert hint_options({"idempotentHint": True})["cacheable"] is False


def test_a_read_only_tool_called_in_parallel_runs_at_the_same_time_and_is_not_journaled(tmp_path, stdio_tools):
    calls = [tool_call("lookup", {"key": k}, id=f"c{i}") for i, k in enumerate(["alpha", "beta", "gamma"])]
    model = ScriptedChatModel(replies=[calls, [tool_call("peak_lookups", {}, id="p")], "1, 2 and 3"])
    outcome = run("look up three keys", db=tmp_path / "runs.db", model=model, tools=stdio_tools, thread_id="t")
    assert outcome.status == "done"
    done = actions(tmp_path / "runs.db", "t")
    assert [a["observation"] for a in done[:3]] == ["1", "2", "3"]
    assert int(done[3]["observation"]) >= 2  # the server saw lookups overlap
    with open_db(tmp_path / "runs.db") as saver:
        assert saver.journal.rows("t") == []


def test_a_destructive_tool_is_journaled_and_a_replayed_step_does_not_run_it_again(tmp_path, stdio_tools):
    model = ScriptedChatModel(replies=[[tool_call("add_note", {"text": "buy milk"}, id="c1")], "noted"])
    run("note it", db=tmp_path / "runs.db", model=model, tools=stdio_tools, thread_id="t")
    with open_db(tmp_path / "runs.db") as saver:
        rows = saver.journal.rows("t")
    assert [(r["tool"], r["observation"]) for r in rows] == [("add_note", "saved note 'buy milk'")]

    add_note = next(t for t in stdio_tools if t.name == "add_note")
    executor = ToolExecutor(journal=ToolJournal(":memory:"))
    call, place = ToolCall(add_note, {"text": "call mum"}, "c9"), Place("t2", 0, 1)
    first, again = executor.run([call], place)[0], executor.run([call], place)[0]
    assert (first.status, again.status, again.observation) == ("ok", "replayed", "saved note 'call mum'")
    assert notes(tmp_path) == ["buy milk", "call mum"]


def test_an_mcp_error_answer_is_an_error_observation(tmp_path, stdio_tools):
    model = ScriptedChatModel(replies=[[tool_call("fail", {"reason": "disk on fire"}, id="c1")], "it failed"])
    outcome = run("try it", db=tmp_path / "runs.db", model=model, tools=stdio_tools, thread_id="t")
    (failed,) = actions(tmp_path / "runs.db", "t")
    assert outcome.status == "done" and failed["error"] is True
    assert failed["observation"].startswith("ERROR: McpToolError: MCP server 'notes' answered fail with an error")
    assert "disk on fire" in failed["observation"]


def test_a_stdio_server_killed_mid_call_is_an_error_observation_and_is_started_again(tmp_path, stdio_tools):
    script = [[tool_call("server_pid", {}, id="a")], [tool_call("die", {}, id="b")],
              [tool_call("server_pid", {}, id="c")], "it restarted"]
    outcome = run("kill it", db=tmp_path / "runs.db", model=ScriptedChatModel(replies=script), tools=stdio_tools, thread_id="t")
    before, died, after = actions(tmp_path / "runs.db", "t")
    assert outcome.status == "done"
    assert died["error"] is True and "during the call of die (it died or was killed)" in died["observation"]
    assert after["error"] is False and after["observation"] != before["observation"]  # a new server process


def test_an_http_result_over_the_cap_is_read_no_further_and_the_session_goes_on(http_server):
    import resource

    from reinloop.tools.mcpclient import MAX_MESSAGE_BYTES

    port, _ = http_server
    with mcp({"mcpServers": {"web": {"url": f"http://127.0.0.1:{port}/mcp", "transport": "streamable_http"}}}) as tools:
        huge = {t.name: t for t in tools}["huge"]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        began = time.monotonic()
        big = ToolExecutor(Limits(tool_timeout=60)).run_one(huge, {"size": 20_000_000})  # 16 MB took 8.5 s before
        assert big.observation.startswith(f"ERROR: McpResultTooLarge: MCP server 'web' answered huge with more than "
                                          f"{MAX_MESSAGE_BYTES:,} bytes"), big.observation[:300]
        assert time.monotonic() - began < 30  # the server still builds and sends its text; the client stops reading
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 15_000  # never held the 20 MB
        small = ToolExecutor().run_one(huge, {"size": 5})
        assert (small.error, small.observation) == (False, "xxxxx")


def test_a_streamable_http_server_serves_parallel_calls_and_its_death_mid_call_is_an_error(tmp_path, http_server):
    port, procs = http_server
    with mcp({"mcpServers": {"web": {"url": f"http://127.0.0.1:{port}/mcp", "transport": "streamable_http"}}}) as tools:
        by_name = {t.name: t for t in tools}
        assert options_of(by_name["lookup"]).parallel_safe
        calls = [ToolCall(by_name["lookup"], {"key": k}, f"c{k}", i) for i, k in enumerate(["alpha", "beta"])]
        assert [r.observation for r in ToolExecutor().run(calls)] == ["1", "2"]
        assert int(ToolExecutor().run_one(by_name["peak_lookups"], {}).observation) == 2

        died = ToolExecutor().run_one(by_name["die"], {})
        assert died.error and died.observation.startswith("ERROR: McpServerGone: MCP server 'web'")
        down = ToolExecutor().run_one(by_name["lookup"], {"key": "alpha"})
        assert down.error and "McpServerGone" in down.observation  # nothing listens: an observation, no crash
        assert (down.attempts, ToolExecutor().run_one(by_name["set_flag"], {}).attempts) == (3, 3)  # read-only, idempotent: retried
        assert ToolExecutor().run_one(by_name["add_note"], {"text": "x"}).attempts == 1  # destructive: never retried

        procs.append(start_http(port, tmp_path))  # the server is back: the next call reconnects
        back = ToolExecutor().run_one(by_name["lookup"], {"key": "gamma"})
        assert (back.error, back.observation) == (False, "3")


def test_a_name_that_clashes_with_a_built_in_tool_is_refused_naming_both(stdio_tools):
    with pytest.raises(DuplicateToolError, match=r"'calculator'.*reinloop's built-in tool 'calculator' and MCP server 'notes'") as caught:
        build_graph(ScriptedChatModel(replies=[]), [*builtins("calculator"), *stdio_tools])
    assert caught.value.name == "calculator" and len(caught.value.sources) == 2
    assert "prefix" in str(caught.value)


def test_prefix_names_each_tool_after_its_server_so_the_clash_is_gone(tmp_path):
    with mcp(stdio_config(tmp_path), prefix=True) as tools:
        assert "notes_calculator" in [t.name for t in tools]
        graph = build_graph(ScriptedChatModel(replies=[]), [*builtins("calculator"), *tools])
        assert {"calculator", "notes_calculator"} <= set(graph.reinloop_context.tools.names())


def test_two_servers_offering_the_same_tool_are_refused_naming_both(tmp_path):
    config = stdio_config(tmp_path)
    config["mcpServers"]["more"] = config["mcpServers"]["notes"]
    with pytest.raises(DuplicateToolError, match=r"two MCP tools are named 'lookup': MCP server 'notes'.* and MCP server 'more'"):
        mcp(config)


def test_arguments_are_checked_against_the_servers_json_schema(tmp_path, stdio_tools):
    model = ScriptedChatModel(replies=[[tool_call("lookup", {"key": 7}, id="c1")], "gave up"])
    run("look up", db=tmp_path / "runs.db", model=model, tools=stdio_tools, thread_id="t")
    (bad,) = actions(tmp_path / "runs.db", "t")
    assert "invalid arguments for lookup: key: 7 is not of type 'string'" in (bad.get("problem") or bad["observation"])


def test_a_server_that_cannot_start_is_refused_before_any_run(tmp_path):
    config = {"mcpServers": {"gone": {"command": str(tmp_path / "no-such-server"), "args": []}}}
    with pytest.raises(ConfigurationError, match="MCP server 'gone' could not be started or reached"):
        mcp(config)


def test_a_config_mistake_names_the_server_and_the_key(tmp_path):
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"notes": {"comand": "python"}}}))
    with pytest.raises(ConfigurationError, match=r"servers.json: MCP server 'notes' has unknown key\(s\) comand"):
        mcp(path)


def test_a_resumed_run_reconnects_in_a_new_process_and_never_stores_the_secret(tmp_path):
    token = "tok-" + "s3cret" * 4
    (tmp_path / "servers.json").write_text(json.dumps(stdio_config(tmp_path, MCP_TOKEN=token)))
    start = subprocess.run([sys.executable, str(AGENT), "start", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert start.returncode == 0, start.stderr
    assert json.loads(start.stdout)["paused"] is True
    assert token.encode() not in (tmp_path / "runs.db").read_bytes()

    bare = {k: v for k, v in os.environ.items() if k not in ("MCP_TOKEN", "NOTES_FILE")}
    refused = subprocess.run([sys.executable, str(AGENT), "resume", str(tmp_path)], capture_output=True, text=True,
                             timeout=120, env=bare)
    assert refused.returncode != 0 and "MCP_TOKEN" in refused.stderr and "never stores" in refused.stderr

    env = {**bare, "MCP_TOKEN": token, "NOTES_FILE": str(tmp_path / "notes.txt")}
    resumed = subprocess.run([sys.executable, str(AGENT), "resume", str(tmp_path)], capture_output=True, text=True,
                             timeout=120, env=env)
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout)
    assert out["status"] == "done"
    digest = hashlib.sha256(token.encode()).hexdigest()[:12]
    assert f"token sha256 {digest}" in [o["observation"] for o in out["observations"]]  # the token reached the server again
    assert notes(tmp_path) == ["one"]  # the note of the first process was not written again
    assert token.encode() not in (tmp_path / "runs.db").read_bytes()


def test_the_stored_config_keeps_no_secret_from_env_arguments_headers_or_urls(tmp_path):
    from reinloop.tools.mcpconfig import parse_config

    config = parse_config({"mcpServers": {
        "cli": {"command": "srv", "args": ["--token", "t0ps3cret", "--api-key=k3y", "--name", "x", "--pw", "${PW}"],
                "env": {"API_TOKEN": "e1v", "HOME_DIR": "${HOME}"}},
        "web": {"url": "http://user:pa55@127.0.0.1:9/mcp?key=q", "headers": {"Authorization": "Bearer b34rer",
                                                                              "X-Team": "${TEAM}"}},
    }})
    stored = json.dumps(config.stored())
    for secret in ("t0ps3cret", "k3y", "e1v", "pa55", "b34rer"):
        assert secret not in stored
    servers = config.stored()["mcpServers"]
    assert servers["cli"]["env"] == {"API_TOKEN": "${API_TOKEN}", "HOME_DIR": "${HOME}"}  # names only
    assert servers["cli"]["args"][-2:] == ["--pw", "${PW}"]  # a reference is no secret
    assert servers["web"]["headers"] == {"X-Team": "${TEAM}"} and servers["web"]["unstored_headers"] == ["Authorization"]


def test_a_config_stored_without_a_credential_asks_for_the_config_again(tmp_path):
    from reinloop.tools.mcpconfig import parse_config

    stored = parse_config({"mcpServers": {"cli": {"command": "srv", "args": ["--token", "t0ps3cret"]}}}).stored()
    with pytest.raises(ConfigurationError, match="MCP server 'cli' was stored without a credential in its arguments: "
                                                 "reinloop never stores credentials; give the MCP config again"):
        mcp(stored)


def test_a_react_reply_with_a_bare_input_fills_the_only_required_argument(tmp_path, stdio_tools):
    model = ScriptedChatModel(replies=["Thought: look it up\nAction: lookup\nAction Input: beta", "Final Answer: 2"])
    outcome = run("beta?", db=tmp_path / "runs.db", model=model, tools=stdio_tools, thread_id="t", protocol="react")
    (looked,) = actions(tmp_path / "runs.db", "t")
    assert (looked["args"], looked["observation"], outcome.answer) == ({"key": "beta"}, "2", "2")


def test_a_tool_called_after_its_connections_were_closed_says_so_at_once(tmp_path):
    with mcp(stdio_config(tmp_path)) as tools:
        lookup = next(t for t in tools if t.name == "lookup")
    result = ToolExecutor().run_one(lookup, {"key": "alpha"})
    assert result.error and "these MCP tools were closed" in result.observation
    assert result.seconds < 5


def test_the_cli_runs_with_mcp_servers_and_resumes_reconnecting(tmp_path, openai_server, capsys, monkeypatch):
    from reinloop.cli.app import main
    from tests.openai_server import completion

    (tmp_path / "servers.json").write_text(json.dumps(stdio_config(tmp_path)))
    db = str(tmp_path / "runs.db")
    openai_server.responses += [completion(tool_calls=[{"name": "add_note", "args": {"text": "from the cli"}}])]
    code = main(["run", "note it", "--base-url", openai_server.base_url, "--tools", "get_weather", "--mcp",
                 str(tmp_path / "servers.json"), "--json", "--quiet", "--thread", "m1", "--db", db, "--max-steps", "1",
                 "--approve", "none"])
    out = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (code, out["paused"]) == (3, True)  # the step limit paused it after the note
    shown = {t["function"]["name"] for t in openai_server.requests[0]["tools"]}
    assert {"get_weather", "lookup", "add_note"} <= shown
    assert notes(tmp_path) == ["from the cli"]

    monkeypatch.setenv("NOTES_FILE", str(tmp_path / "notes.txt"))  # the value the stored config refers to
    openai_server.responses += [completion(tool_calls=[{"name": "lookup", "args": {"key": "gamma"}}]), completion("3")]
    code = main(["resume", "m1", "--base-url", openai_server.base_url, "--extra-steps", "2", "--json", "--quiet", "--db", db,
                 "--start-mcp"])
    out = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (code, out["status"], out["answer"]) == (0, "done", "3")
    assert out["observations"][-1]["observation"] == "3"
    assert notes(tmp_path) == ["from the cli"]


def test_the_cli_asks_approval_for_a_destructive_mcp_tool_by_default_and_not_for_a_read_only_one(
        tmp_path, openai_server, capsys):
    from reinloop.cli.app import main
    from tests.openai_server import completion

    (tmp_path / "servers.json").write_text(json.dumps(stdio_config(tmp_path)))
    openai_server.responses += [completion(tool_calls=[{"name": "lookup", "args": {"key": "gamma"}},
                                                       {"name": "add_note", "args": {"text": "unasked"}}])]
    code = main(["run", "note it", "--base-url", openai_server.base_url, "--tools", "get_weather", "--mcp",
                 str(tmp_path / "servers.json"), "--json", "--quiet", "--thread", "m2", "--db", str(tmp_path / "r.db")])
    out = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert (code, out["status"]) == (4, "waiting")
    assert [c["tool"] for c in out["waiting"]] == ["add_note"]  # lookup is read-only: it ran
    assert notes(tmp_path) == []  # the destructive call never ran unasked


def test_the_cli_refuses_an_mcp_tool_named_like_a_built_in_one_naming_both(tmp_path, openai_server, capsys):
    from reinloop.cli.app import main

    (tmp_path / "servers.json").write_text(json.dumps(stdio_config(tmp_path)))
    code = main(["run", "x", "--base-url", openai_server.base_url, "--tools", "calculator", "--mcp",
                 str(tmp_path / "servers.json"), "--db", str(tmp_path / "runs.db")])
    err = capsys.readouterr().err
    assert code == 2 and openai_server.requests == []  # refused before the run starts: a usage error
    assert "reinloop's built-in tool 'calculator' and MCP server 'notes'" in err and '"prefix": true' in err


def test_a_run_given_mcp_as_an_option_closes_its_servers_and_a_credential_it_lost_is_asked_for_again(tmp_path):
    from reinloop import Limits
    from reinloop.runs.api import resume

    config = stdio_config(tmp_path)
    config["mcpServers"]["notes"]["args"] += ["--token", "t0ps3cret"]  # the server ignores it; the store must not keep it
    db = tmp_path / "runs.db"
    script = [[tool_call("server_pid", {}, id="a"), tool_call("add_note", {"text": "one"}, id="b")]]
    paused = run("note", db=db, model=ScriptedChatModel(replies=script), mcp=config, thread_id="t", tools="get_weather",
                 limits=Limits(max_steps=1))
    assert paused.paused and notes(tmp_path) == ["one"]
    pid = int(actions(db, "t")[0]["observation"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and running(pid):
        time.sleep(0.05)
    assert not running(pid)  # the run closed the server it started
    assert b"t0ps3cret" not in db.read_bytes()

    with pytest.raises(ConfigurationError, match="'notes' was stored without a credential in its arguments"):
        resume("t", db=db, model=ScriptedChatModel(replies=[]), extra_steps=2, start_mcp=True)
    done = resume("t", db=db, model=ScriptedChatModel(replies=[[tool_call("lookup", {"key": "beta"}, id="c")], "2"]),
                  extra_steps=2, mcp=config)
    assert (done.status, done.answer, notes(tmp_path)) == ("done", "2", ["one"])
    assert b"t0ps3cret" not in db.read_bytes()


def test_build_graph_refuses_mcp_as_an_option_and_says_how_to_pass_the_tools(tmp_path):
    with pytest.raises(ConfigurationError, match=r"build_graph takes tool objects, not RunSpec.mcp: connect with reinloop.tools.mcp"):
        build_graph(ScriptedChatModel(replies=[]), builtins("calculator"), mcp={"mcpServers": {}})
