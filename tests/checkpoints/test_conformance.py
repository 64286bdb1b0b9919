"""LangGraph's own checkpointer conformance suite, run against SqliteCheckpointer on a real file."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from langgraph.checkpoint.conformance import checkpointer_test, validate

from reinloop.checkpoints import SqliteCheckpointer


@checkpointer_test(name="SqliteCheckpointer")
async def sqlite_checkpointer():
    with tempfile.TemporaryDirectory() as tmp:
        saver = SqliteCheckpointer.open(Path(tmp) / "conformance.db")
        try:
            yield saver
        finally:
            saver.close()


def test_sqlite_checkpointer_passes_the_langgraph_conformance_suite():
    report = asyncio.run(validate(sqlite_checkpointer))
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert report.passed_all_base(), failures
    passed = sum(r.tests_passed for r in report.results.values())
    assert passed == 58 + 8 + 7 + 8, (passed, failures)  # base + copy_thread + delete_for_runs + prune
    assert report.passed_all(), failures
