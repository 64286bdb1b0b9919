"""A run whose side-effecting tool hangs, for the SIGKILL crash test (run as a script).

``python crash_agent.py start DIR`` starts the run: the model asks for an
idempotent ``ping`` and then ``send_mail``; ``send_mail`` appends a line to
``DIR/sent.txt`` and sleeps until the test kills the process.
``python crash_agent.py resume DIR`` resumes the thread in a fresh process
and prints, as JSON, the final state and what the model was shown.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from reinloop import build_graph
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import configure

MODE, DIR = sys.argv[1], Path(sys.argv[2])


def append(name: str, line: str) -> None:
    with open(DIR / name, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


@tool
def ping(host: str) -> str:
    """Check that a host answers (idempotent)."""
    append("pinged.txt", host)
    return f"{host} answers"


@configure(side_effects=True, timeout=120)
@tool
def send_mail(to: str, body: str) -> str:
    """Send an email (a side effect)."""
    append("sent.txt", to)
    time.sleep(60)  # the test kills the process here
    return f"sent to {to}"


replies = (
    [[tool_call("ping", {"host": "mail"}, id="p1"), tool_call("send_mail", {"to": "ann@example.com", "body": "hi"}, id="m1")]]
    if MODE == "start"
    else ["I could not confirm the email was sent; please check the outbox."]
)
model = ScriptedChatModel(replies=replies)
db = DIR / "run.db"
saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
graph = build_graph(model, [ping, send_mail], checkpointer=saver, journal=db)
config = {"configurable": {"thread_id": "crash-1"}}
if MODE == "start":
    graph.invoke({"task": "email ann"}, config)
else:
    out = graph.invoke(None, config)
    shown = [str(m.content) for m in model.prompts[-1]]
    print(json.dumps({"status": out["status"], "actions": out["scratchpad"][0]["actions"], "shown": shown}))
