"""LangGraph's own checkpointer conformance suite, run against both backends on real databases."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

import psycopg
from langgraph.checkpoint.conformance import checkpointer_test, validate

from reinloop.checkpoints import PostgresCheckpointer, SqliteCheckpointer

from ..conftest import with_schema


@checkpointer_test(name="SqliteCheckpointer")
async def sqlite_checkpointer():
    with tempfile.TemporaryDirectory() as tmp:
        saver = SqliteCheckpointer.open(Path(tmp) / "conformance.db")
        try:
            yield saver
        finally:
            saver.close()


def postgres_factory(server_url: str):
    """A factory giving each conformance test a saver on a fresh schema of the test server."""

    @checkpointer_test(name="PostgresCheckpointer")
    async def postgres_checkpointer():
        schema = f"c_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        saver = PostgresCheckpointer.open(with_schema(server_url, schema))
        try:
            yield saver
        finally:
            saver.close()
            with psycopg.connect(server_url, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")

    return postgres_checkpointer


def check(report) -> None:
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert report.passed_all_base(), failures
    passed = sum(r.tests_passed for r in report.results.values())
    assert passed == 58 + 8 + 7 + 8, (passed, failures)  # base + copy_thread + delete_for_runs + prune
    assert report.passed_all(), failures


def test_sqlite_checkpointer_passes_the_langgraph_conformance_suite():
    check(asyncio.run(validate(sqlite_checkpointer)))


def test_postgres_checkpointer_passes_the_langgraph_conformance_suite(pg_server_url):
    check(asyncio.run(validate(postgres_factory(pg_server_url))))
