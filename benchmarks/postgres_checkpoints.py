"""PostgreSQL storage: reinloop's PostgresCheckpointer vs LangGraph's PostgresSaver on the same graph.

    python benchmarks/postgres_checkpoints.py                 # 50, 100 and 200 steps
    python benchmarks/postgres_checkpoints.py --pg postgresql://user:pw@host/db --steps 100 400

The measurement behind storing checkpoints with reinloop's own layout on
PostgreSQL instead of reusing ``langgraph-checkpoint-postgres``. The graph and
the model are those of ``benchmarks/checkpoints.py`` (a tool returning 2 KB
per step, the prompt holding the last three steps, ``durability="sync"``),
except that the tool's text is made of seeded random words, which compress
about as well as prose: PostgreSQL compresses large values (TOAST), and the
repeated sentence of ``benchmarks/checkpoints.py`` would compress to almost
nothing, hiding what is stored.
Each saver writes into a fresh schema of one server; the size is
``pg_total_relation_size`` of the schema's tables (indexes and TOAST
included, after ``VACUUM`` so dead rows do not count), the read is the latest
checkpoint from a new connection (median of 3).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.checkpoints import NO_LIMITS, OUTPUT_CHARS, mb, ms  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from reinloop import Memory, build_graph  # noqa: E402
from reinloop.checkpoints import PostgresCheckpointer  # noqa: E402
from reinloop.testing import ScriptedChatModel, tool_call  # noqa: E402

WORDS = [f"{random.Random(i).choice('bcdfghklmnprstvz')}{random.Random(-i).choice('aeiou')}"
         f"{''.join(random.Random(i * 7).choices('abcdefghiklmnoprstuy', k=random.Random(i).randint(1, 7)))}"
         for i in range(3000)]


@tool
def fetch(page: int) -> str:
    """Fetch one page of a long document."""
    rng = random.Random(page)
    text = " ".join(rng.choice(WORDS) for _ in range(OUTPUT_CHARS // 4))
    return f"page {page}: {text}"[:OUTPUT_CHARS]


CONFIG = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
WINDOW = Memory(window_steps=3, summarize=False, max_prompt_tokens=None)
"""The prompt holds the last three steps, for both savers (as in benchmarks/checkpoints.py)."""


def new_schema(url: str) -> str:
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return schema


def in_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


def open_saver(kind: str, url: str) -> tuple[Any, Any]:
    """(saver, what to close)."""
    if kind == "reinloop":
        saver = PostgresCheckpointer.open(url)
        return saver, saver
    from langgraph.checkpoint.postgres import PostgresSaver

    conn = psycopg.connect(url, autocommit=True, prepare_threshold=0)
    from psycopg.rows import dict_row

    conn.row_factory = dict_row
    saver = PostgresSaver(conn)
    saver.setup()
    return saver, conn


def schema_bytes(url: str, schema: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))]
        for t in tables:
            conn.execute(f"VACUUM {schema}.{t}")
        row = conn.execute("SELECT sum(pg_total_relation_size(format('%%I.%%I', schemaname, tablename)::regclass)) "
                           "FROM pg_tables WHERE schemaname = %s", (schema,)).fetchone()
    return int(row[0] or 0)


def run_once(kind: str, steps: int, url: str) -> dict[str, float]:
    schema = new_schema(url)
    target = in_schema(url, schema)
    replies = [[tool_call("fetch", {"page": i}, id=f"call_{i}")] for i in range(steps)]
    saver, handle = open_saver(kind, target)
    graph = build_graph(ScriptedChatModel(replies=[*replies, "read them all"]), [fetch], limits=NO_LIMITS,
                        checkpointer=saver, memory=WINDOW)
    start = time.perf_counter()
    out = graph.invoke({"task": "read every page"}, {**CONFIG, "recursion_limit": 10 * steps + 100})
    seconds = time.perf_counter() - start
    assert out["status"] == "done" and len(out["scratchpad"]) == steps + 1
    handle.close()
    reads = []
    for _ in range(3):
        saver, handle = open_saver(kind, target)
        start = time.perf_counter()
        latest = saver.get_tuple(CONFIG)
        reads.append(time.perf_counter() - start)
        assert len(latest.checkpoint["channel_values"]["scratchpad"]) == steps + 1
        handle.close()
    return {"size": schema_bytes(url, schema), "per_step": seconds / steps, "read": sorted(reads)[1]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[50, 100, 200])
    parser.add_argument("--pg", help="a PostgreSQL URL [$REINLOOP_TEST_PG, else a throwaway server]")
    args = parser.parse_args(argv)
    url, stop = args.pg or os.environ.get("REINLOOP_TEST_PG"), None
    if not url:
        from tests import pg_server

        server = pg_server.start(durable=True)
        url, stop = server.url, server.stop
    try:
        rows = []
        for n in args.steps:
            print(f"{n} steps ...", file=sys.stderr, flush=True)
            rows.append((n, run_once("reinloop", n, url), run_once("postgressaver", n, url)))
    finally:
        if stop:
            stop()
    print("| steps | reinloop size | PostgresSaver size | size ratio | reinloop time/step | PostgresSaver time/step "
          "| time ratio | reinloop read latest | PostgresSaver read latest |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, mine, other in rows:
        print(f"| {n:,} | {mb(mine['size'])} | {mb(other['size'])} | 1/{other['size'] / mine['size']:,.1f} "
              f"| {ms(mine['per_step'])} | {ms(other['per_step'])} | {mine['per_step'] / other['per_step']:.2f} "
              f"| {ms(mine['read'])} | {ms(other['read'])} |")
    if len(rows) >= 2:
        (a, ma, oa), (b, mb_, ob) = rows[0], rows[-1]
        print(f"\nsteps x{b / a:g}: reinloop size x{mb_['size'] / ma['size']:.1f}, PostgresSaver size x{ob['size'] / oa['size']:.1f}")


if __name__ == "__main__":
    main()
