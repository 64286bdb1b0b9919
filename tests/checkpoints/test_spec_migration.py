"""Runs stored before the ``runs`` table held a RunSpec (schema 5, reinloop at git a4c281e) open, show and resume."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from reinloop import Limits, Memory, RetryPolicy, RunSpec; from reinloop.runs import api as runs
from reinloop.checkpoints import open_saver
from reinloop.checkpoints.schema import latest_version
from reinloop.cli.app import main
from reinloop.testing import ScriptedChatModel
from reinloop.tools import ToolSettings

from .fixtures.v5_run import THREAD

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def v5_db(tmp_path: Path) -> Path:
    db = tmp_path / "v5.db"
    with gzip.open(FIXTURES / "v5-paused-run.db.gz") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return db


def test_a_run_stored_by_schema_5_reads_back_as_the_spec_it_was_started_with(v5_db):
    detail = runs.show_run(THREAD, v5_db)  # opening migrates it
    assert detail.run.spec is None and detail.pending_break is not None
    assert runs.stored_spec(detail.run) == RunSpec(
        model="<ScriptedChatModel object>", protocol="json", tools=("calculator",), tool_detail="compact",
        max_output_tokens=300, system_prompt="Be brief.", retry=RetryPolicy(attempts=2, timeout=45.0),
        limits=Limits(max_steps=1, max_seconds=300), tool_settings=ToolSettings(write_quota=5000),
        memory=Memory(window_steps=2, summary_batch=3, recall=True, embeddings="hash", user="ops"),  # stored with 3
    )
    with open_saver(v5_db) as saver:
        versions = [r["version"] for r in saver.db.query("SELECT version FROM migrations ORDER BY version")]
    assert versions == list(range(1, latest_version() + 1))


def test_a_run_stored_by_schema_5_resumes_with_its_settings_and_overrides(v5_db):
    model = ScriptedChatModel(replies=['{"answer": "42"}'])
    out = runs.resume(THREAD, db=v5_db, extra_steps=1, model=model, memory={"window_steps": 4})
    assert out.status == "done" and out.answer == "42"
    prompt = "\n".join(str(m.content) for m in model.prompts[0])
    assert "Be brief." in prompt and "calculator(" in prompt  # its system prompt; compact JSON-protocol tools


def test_runs_show_prints_the_spec_of_an_old_run_and_of_a_new_one(v5_db, capsys):
    assert main(["runs", "show", THREAD, "--db", str(v5_db)]) == 0
    out = capsys.readouterr().out
    assert "protocol: json" in out and "compact" in out and '"max_output_tokens": 300' in out
    assert main(["runs", "show", THREAD, "--db", str(v5_db), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert RunSpec.from_dict(shown["spec"]).limits.max_steps == 1
