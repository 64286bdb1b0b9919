"""``reinloop --help`` and ``reinloop runs list`` start without the heavy libraries."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("langgraph", "langchain", "langchain_core", "langchain_openai", "openai", "tiktoken", "numpy", "psycopg",
         "pygraphviz", "rich", "opentelemetry")

PROBE = """
import json, sys
from reinloop.cli import main
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


def test_runs_list_on_a_new_database_loads_no_model_or_graph_code(tmp_path):
    db = tmp_path / "runs.db"
    subprocess.run([sys.executable, "-c", f"from reinloop.runs import open_db\nwith open_db({str(db)!r}, write=True, "
                    "create=True): pass"], check=True)
    loaded = loaded_after("runs", "list", "--db", str(db))
    # the checkpoint store still rests on langgraph.checkpoint (its saver contract) and sqlite-utils
    assert not loaded & {"langchain", "langchain_openai", "openai", "tiktoken", "psycopg", "pygraphviz", "rich",
                         "langgraph.graph", "langgraph.pregel", "reinloop.graph", "reinloop.models", "reinloop.runs"}
