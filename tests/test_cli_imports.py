"""``reinloop --help`` and ``reinloop runs list`` start without the heavy libraries."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("langgraph", "langchain", "langchain_core", "langchain_openai", "openai", "tiktoken", "numpy", "psycopg",
         "pygraphviz", "rich", "opentelemetry")

PROBE = """
import json, sys
from reinloop.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} | set(sys.modules))))
"""


def loaded_after(*argv: str, cwd=None) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=cwd, check=True)
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_help_loads_no_model_graph_or_storage_library():
    for argv in (["--help"], ["run", "--help"], ["batch", "--help"], ["resume", "--help"]):
        loaded = loaded_after(*argv)
        assert not loaded & set(HEAVY), (argv, sorted(loaded & set(HEAVY)))


STORAGE = ("sqlite_utils", "reinloop.checkpoints.sql", "reinloop.graph", "reinloop.models.resolve", "reinloop.runs.api")
"""What reading the run list does without: sqlite-utils (it imports numpy), the saver, the loop."""

TWO_RUNS = """
from reinloop import Limits, run
from reinloop.testing import ScriptedChatModel, tool_call
add = [tool_call("calculator", {"expression": "2+2"})]
run("add", db=DB, thread_id="done1", model=ScriptedChatModel(replies=[add, "4"]), tools=["calculator"])
run("loop", db=DB, thread_id="paused1", model=ScriptedChatModel(replies=[add] * 3), tools=["calculator"],
    limits=Limits(max_steps=1))
"""


def test_runs_list_on_a_new_database_loads_no_model_graph_or_storage_library(tmp_path):
    db = tmp_path / "runs.db"
    subprocess.run([sys.executable, "-c", f"from reinloop.runs.api import open_db\nwith open_db({str(db)!r}, write=True, "
                    "create=True): pass"], check=True)
    loaded = loaded_after("runs", "list", "--db", str(db))
    assert not loaded & set(HEAVY + STORAGE), sorted(loaded & set(HEAVY + STORAGE))


def test_runs_list_reads_finished_and_paused_runs_without_langgraph_langchain_or_numpy(tmp_path):
    db = tmp_path / "runs.db"
    subprocess.run([sys.executable, "-c", f"DB = {str(db)!r}" + TWO_RUNS], check=True, cwd=tmp_path)
    loaded = loaded_after("runs", "list", "--db", str(db))
    unwanted = (set(HEAVY) - {"rich"}) | set(STORAGE)  # rich measures the table's cells (East Asian widths)
    assert not loaded & unwanted, sorted(loaded & unwanted)
    proc = subprocess.run([sys.executable, "-m", "reinloop", "runs", "list", "--db", str(db), "--json"],
                          capture_output=True, text=True, check=True)
    assert sorted((r["thread_id"], r["status"]) for r in json.loads(proc.stdout)) == [("done1", "done"), ("paused1", "paused")]
