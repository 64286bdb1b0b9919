"""A run on the test MCP server in its own process: ``start DIR`` pauses at a step limit, ``resume DIR`` finishes it.

``start`` takes the config from ``DIR/servers.json`` (whose ``env`` holds the
token literally, as users write it); ``resume`` gets no config at all: it must
reconnect from what the run stored, with the environment it is given. Each
prints the outcome as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reinloop import Limits
from reinloop.runs.api import resume, run
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import mcp

mode, folder = sys.argv[1], Path(sys.argv[2])
db = folder / "runs.db"
if mode == "start":
    with mcp(folder / "servers.json") as tools:
        model = ScriptedChatModel(replies=[[tool_call("add_note", {"text": "one"}, id="c1")]])
        outcome = run("note one, then check the token", db=db, model=model, tools=tools, thread_id="t1",
                      limits=Limits(max_steps=1))
else:
    model = ScriptedChatModel(replies=[[tool_call("token_check", {}, id="c2")], "noted and checked"])
    outcome = resume("t1", db=db, model=model, extra_steps=3, start_mcp=True)  # the servers of its own run
print(json.dumps({"status": outcome.status, "paused": outcome.paused, "answer": outcome.answer,
                  "observations": outcome.observations}))
