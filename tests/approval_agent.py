"""A run whose mail waits for approval, killed with SIGKILL at a chosen point (run as a script by the tests).

``python approval_agent.py start DIR``: the model asks for ``send_mail``, which
needs approval; the run pauses (it is stored in ``DIR/run.db``).
``python approval_agent.py approve DIR [KILL_AT]``: approves the call in a new
process, killed with SIGKILL at ``KILL_AT``:

- ``decision``: the approve node has read the decision, before its checkpoint;
- ``between``: the decision is checkpointed, the execute node starts, the call has not;
- ``during``: inside ``send_mail``, after its effect, before it returns;
- ``after``: the call returned and is journaled, before execute's checkpoint.

``python approval_agent.py resume DIR`` continues the run in a new process.
Each of them prints the outcome as JSON, with the first step's actions; ``send_mail`` appends to ``DIR/sent.txt``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from langchain_core.tools import tool

from reinloop.runs.pending import approve
from reinloop.runs.api import resume, run, show_run
from reinloop.testing import ScriptedChatModel, tool_call
from reinloop.tools import configure
from reinloop.tools.executor import ToolExecutor

MODE, DIR = sys.argv[1], Path(sys.argv[2])
KILL_AT = sys.argv[3] if len(sys.argv) > 3 else ""
DB = str(DIR / "run.db")


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


@configure(side_effects=True, approval=True)
@tool
def send_mail(to: str, body: str) -> str:
    """Send an email (a side effect that needs approval)."""
    with open(DIR / "sent.txt", "a", encoding="utf-8") as f:
        f.write(to + "\n")
        f.flush()
        os.fsync(f.fileno())
    if KILL_AT == "during":
        die()
    return f"sent to {to}"


def on_event(event: dict) -> None:
    if (KILL_AT, event.get("node")) in (("decision", "approve"), ("after", "execute")):
        die()


if KILL_AT == "between":  # the execute node has started after the approve node's checkpoint: die before any call
    original = ToolExecutor.run

    def run_then_die(self, calls, place=None):  # noqa: ANN001
        if any(c.tool.name == "send_mail" for c in calls):
            die()
        return original(self, calls, place)

    ToolExecutor.run = run_then_die

objects = {"tools": [send_mail], "on_event": on_event}
if MODE == "start":
    model = ScriptedChatModel(replies=[[tool_call("send_mail", {"to": "ann@example.com", "body": "hi"}, id="m1")]])
    outcome = run("email ann", db=DB, thread_id="mail-1", model=model, **objects)
elif MODE == "approve":
    outcome = approve("mail-1", None, db=DB, model=ScriptedChatModel(replies=["mailed"]), **objects)
else:
    outcome = resume("mail-1", db=DB, model=ScriptedChatModel(replies=["mailed"]), **objects)
steps = show_run("mail-1", DB).steps
print(json.dumps({**outcome.as_dict(), "first_step": steps[0]["actions"] if steps else []}, default=str))
