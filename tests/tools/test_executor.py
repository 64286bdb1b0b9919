"""The executor: timeouts, retries, pseudo-success detection and parallel calls."""

from __future__ import annotations

import threading
import time

import pytest
from langchain_core.tools import StructuredTool

from reinloop import Limits
from reinloop.tools import ToolCall, ToolExecutor, WorkerPool, configure, run_tool
from reinloop.tools.executor import EMPTY_RESULT
from reinloop.tools.pool import GRACE_SECONDS, WorkersExhausted


def make_tool(fn, name="t", **options):
    if isinstance(fn, Flaky):
        fn = fn.__call__
    return configure(StructuredTool.from_function(fn, name=name, description=f"{name} tool"), **options)


class Flaky:
    """Raises ``exc`` for the first ``failures`` calls, then answers."""

    def __init__(self, exc, failures):
        self.exc, self.failures, self.calls = exc, failures, 0

    def __call__(self, x: str) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc
        return f"ok after {self.calls}"


def test_a_call_past_its_timeout_is_an_error_within_the_limit():
    release = threading.Event()
    slow = make_tool(lambda x: release.wait(10) and "late", name="slow", timeout=0.3)
    began = time.monotonic()
    result = run_tool(slow, {"x": "a"})
    elapsed = time.monotonic() - began
    release.set()
    assert result.status == "timeout" and result.error
    assert result.observation.startswith("ERROR: ToolTimeout: slow did not finish within 0.3 s and was abandoned.")
    assert 0.3 <= elapsed < 0.3 + 0.5  # the limit plus a small margin


def test_the_run_limit_is_the_default_timeout_and_a_tool_can_override_it():
    release = threading.Event()
    slow = make_tool(lambda x: release.wait(10) and "late", name="slow")
    assert run_tool(slow, {"x": "a"}, Limits(tool_timeout=0.2)).status == "timeout"
    configure(slow, timeout=5)
    threading.Timer(0.3, release.set).start()
    assert run_tool(slow, {"x": "a"}, Limits(tool_timeout=0.2)).observation == "late"


def test_transient_errors_are_retried_until_success():
    flaky = Flaky(ConnectionError("reset"), failures=2)
    result = run_tool(make_tool(flaky, backoff=0.01), {"x": "a"}, Limits(tool_retries=2))
    assert (result.observation, result.error, result.attempts) == ("ok after 3", False, 3)


def test_transient_errors_give_up_after_the_retries():
    flaky = Flaky(TimeoutError("upstream timed out"), failures=10)
    result = run_tool(make_tool(flaky, backoff=0.01, retries=2), {"x": "a"})
    assert flaky.calls == 3
    assert result.observation == "ERROR: TimeoutError: upstream timed out (gave up after 3 attempts)"
    assert result.status == "error" and result.error


def test_permanent_errors_are_not_retried():
    flaky = Flaky(ValueError("no such user"), failures=10)
    result = run_tool(make_tool(flaky, backoff=0.01), {"x": "a"}, Limits(tool_retries=5))
    assert flaky.calls == 1
    assert result.observation == "ERROR: ValueError: no such user"


def test_a_tool_can_declare_its_own_transient_errors():
    class RateLimited(Exception):
        pass

    flaky = Flaky(RateLimited("slow down"), failures=1)
    assert run_tool(make_tool(flaky, backoff=0.01, transient=(RateLimited,)), {"x": "a"}).observation == "ok after 2"
    flaky = Flaky(ConnectionError("refused"), failures=1)
    assert run_tool(make_tool(flaky, backoff=0.01, transient=(RateLimited,)), {"x": "a"}).error  # no longer transient


def test_retries_never_run_past_the_timeout():
    flaky = Flaky(ConnectionError("refused"), failures=10)
    result = run_tool(make_tool(flaky, backoff=5.0, retries=3, timeout=1.0), {"x": "a"})
    assert flaky.calls == 1  # the first backoff would end past the deadline: no retry
    assert result.status == "error" and result.observation == "ERROR: ConnectionError: refused"


def test_zero_tool_retries_is_one_attempt():
    flaky = Flaky(ConnectionError("refused"), failures=1)
    result = run_tool(make_tool(flaky, backoff=0.01), {"x": "a"}, Limits(tool_retries=0))
    assert (result.error, result.attempts, flaky.calls) == (True, 1, 1)


def test_no_retries_when_the_limit_is_off():
    flaky = Flaky(ConnectionError("refused"), failures=1)
    assert run_tool(make_tool(flaky, backoff=0.01), {"x": "a"}, Limits(tool_retries=None)).error
    assert flaky.calls == 1


@pytest.mark.parametrize("value", ["", "   \n\t", None])
def test_empty_results_are_errors(value):
    result = run_tool(make_tool(lambda x: value), {"x": "a"})
    assert (result.observation, result.error) == (EMPTY_RESULT, True)


def test_a_validator_turns_a_pseudo_success_into_an_error():
    def no_placeholder(text: str) -> str | None:
        return "it is a placeholder, not data" if "TODO" in text else None

    bad = run_tool(make_tool(lambda x: "TODO: fill in", validator=no_placeholder), {"x": "a"})
    assert bad.error and bad.observation == (
        "ERROR: the result of t looks wrong: it is a placeholder, not data. The result was: 'TODO: fill in'"
    )
    good = run_tool(make_tool(lambda x: "42 rows", validator=no_placeholder), {"x": "a"})
    assert (good.observation, good.error) == ("42 rows", False)


def test_a_validator_that_raises_fails_the_call():
    result = run_tool(make_tool(lambda x: "data", validator=lambda text: 1 / 0), {"x": "a"})
    assert result.error and "its validator raised ZeroDivisionError" in result.observation


def test_long_results_are_truncated_with_a_marker():
    result = run_tool(make_tool(lambda x: "y" * 50), {"x": "a"}, Limits(max_observation_chars=10))
    assert result.observation == "y" * 10 + "\n[... truncated 40 of 50 characters]"


PAGES = "\n".join(f"- docs/{city}.md — {city}\n# {city}\n\nfiller text for the reader. " + "padding " * 12 +
                  f"\n- population: {n} people\n- area: {n * 3} km2\n" for city, n in
                  [("Hangzhou", 11), ("Beijing", 22), ("Shanghai", 33), ("Chengdu", 44)])
HITS = PAGES + "\n- docs/Wuhan.md — Wuhan\n  …a snippet: population 55 people…"


def test_a_focused_cut_keeps_the_opening_then_the_headings_and_the_lines_with_the_tasks_words():
    from reinloop.tools.executor import GAP, truncate

    cut = truncate(HITS, 400, "What is the population of Chengdu and of Wuhan?")
    lines = cut.split("\n")
    assert lines[0] == "- docs/Hangzhou.md — Hangzhou" and "# Chengdu" in lines and "# Beijing" in lines
    assert "- population: 44 people" in lines and "- area: 132 km2" not in lines  # the task's words, not the rest
    snippet = lines.index("  …a snippet: population 55 people…")
    assert lines[snippet - 1] == "- docs/Wuhan.md — Wuhan"  # an indented line keeps the line it belongs to
    kept = sum(len(line) + 1 for line in lines[:-1] if line != GAP)  # each kept line with its newline
    assert GAP in lines and lines[-1].startswith(f"[... cut {len(HITS) - kept} of {len(HITS)} characters")
    assert len(cut) - len(lines[-1]) <= 400
    assert truncate(HITS, 400, "") == HITS[:400] + f"\n[... truncated {len(HITS) - 400} of {len(HITS)} characters]"
    assert truncate(HITS, 400, "nothing here matches") == truncate(HITS, 400)  # no word of the task: the head
    assert truncate("y" * 50, 10, "yyy") == "y" * 10 + "\n[... truncated 40 of 50 characters]"  # one line: the head
    assert truncate(HITS, 10_000, "population") == HITS


def test_a_focused_cut_of_a_huge_result_weighs_only_its_first_part():
    from reinloop.tools.executor import FOCUS_SCAN, GAP, truncate

    huge = "opening line\n" + "filler\n" * (FOCUS_SCAN // 4) + "the population: 1\n" * 10
    # the matching lines lie past the part weighed: as if none matched, the head is kept
    assert truncate(huge, 300, "population") == truncate(huge, 300)
    near = "opening line\n" + "filler\n" * 100 + "the population: 1\n" + "filler\n" * (FOCUS_SCAN // 4)
    lines = truncate(near, 300, "population").split("\n")
    assert "the population: 1" in lines and lines[-2] == GAP and lines[-1].endswith(f"of {len(near)} characters: "
                                                                                   "kept the opening and the lines with the task's words]")


def test_a_focused_cut_matches_chinese_by_character_pairs():
    from reinloop.tools.executor import truncate

    text = "\n".join(["开头" * 30, *(f"- 其他数据 {i}" for i in range(40)), "- 常住人口: 2140 万人", "结尾"])
    assert "- 常住人口: 2140 万人" in truncate(text, 200, "成都的常住人口是多少？").split("\n")
    assert "- 常住人口: 2140 万人" not in truncate(text, 200).split("\n")


def test_parallel_safe_calls_overlap_and_keep_the_model_order():
    barrier = threading.Barrier(2, timeout=5)  # only passes if both calls run at once
    second_done = threading.Event()
    threads = {}

    def first(x: str) -> str:
        barrier.wait()
        second_done.wait(5)  # finishes after the second call
        threads["first"] = threading.current_thread().name
        return "first"

    def second(x: str) -> str:
        barrier.wait()
        threads["second"] = threading.current_thread().name
        second_done.set()
        return "second"

    calls = [ToolCall(make_tool(first, "first", parallel_safe=True), {"x": "a"}, "c1", 0),
             ToolCall(make_tool(second, "second", parallel_safe=True), {"x": "b"}, "c2", 1)]
    results = ToolExecutor().run(calls)
    assert [r.observation for r in results] == ["first", "second"]
    assert threads["first"] != threads["second"]


def test_calls_run_one_after_the_other_unless_all_are_parallel_safe():
    events = []

    def recorder(name):
        def fn(x: str) -> str:
            events.append(f"start {name}")
            time.sleep(0.05)
            events.append(f"end {name}")
            return name
        return fn

    calls = [ToolCall(make_tool(recorder("a"), "a", parallel_safe=True), {"x": "1"}, "c1", 0),
             ToolCall(make_tool(recorder("b"), "b"), {"x": "2"}, "c2", 1),
             ToolCall(make_tool(recorder("c"), "c", parallel_safe=True), {"x": "3"}, "c3", 2)]
    results = ToolExecutor().run(calls)
    assert [r.observation for r in results] == ["a", "b", "c"]
    assert events == ["start a", "end a", "start b", "end b", "start c", "end c"]


def test_each_parallel_call_keeps_its_own_deadline():
    release = threading.Event()
    slow = make_tool(lambda x: release.wait(10) and "late", "slow", parallel_safe=True, timeout=0.2)
    fast = make_tool(lambda x: "quick", "fast", parallel_safe=True)
    results = ToolExecutor().run([ToolCall(slow, {"x": "a"}, "c1", 0), ToolCall(fast, {"x": "b"}, "c2", 1)])
    release.set()
    assert [r.status for r in results] == ["timeout", "ok"]


def test_when_every_worker_is_stuck_new_calls_fail_after_a_short_grace():
    release = threading.Event()
    hung = make_tool(lambda x: release.wait(10) and "late", "hung", timeout=0.1)
    executor = ToolExecutor(pool=WorkerPool(size=2))
    assert [executor.run_one(hung, {"x": str(i)}).status for i in range(2)] == ["timeout", "timeout"]
    began = time.monotonic()
    result = executor.run_one(make_tool(lambda x: "fine", "other"), {"x": "a"})
    assert time.monotonic() - began < GRACE_SECONDS + 0.5
    assert result.status == "busy" and result.error
    assert result.observation.startswith("ERROR: WorkersExhausted: all 2 tool workers are still busy with calls that timed out")
    release.set()
    deadline = time.monotonic() + 5
    while executor.pool.stats()["running"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert executor.run_one(make_tool(lambda x: "fine", "other"), {"x": "a"}).observation == "fine"


def test_a_full_pool_of_live_calls_makes_the_next_call_wait_not_fail():
    pool = WorkerPool(size=1)
    first, _ = pool.submit(lambda deadline: time.sleep(0.2) or "first", timeout=5)
    second, _ = pool.submit(lambda deadline: "second", timeout=5)  # waits for the slot
    assert first.done() and second.result(timeout=5) == "second"


def test_worker_threads_are_daemons_and_see_the_callers_context():
    import contextvars

    var = contextvars.ContextVar("var", default="unset")
    var.set("from caller")
    future, _ = WorkerPool().submit(lambda d: (threading.current_thread().daemon, var.get()), timeout=5)
    assert future.result(timeout=5) == (True, "from caller")


def test_pool_stats_count_overdue_calls():
    release = threading.Event()
    pool = WorkerPool(size=3)
    pool.submit(lambda d: release.wait(10), timeout=0.01)
    time.sleep(0.05)
    assert pool.stats() == {"size": 3, "running": 1, "overdue": 1, "threads": 1}
    release.set()


def test_a_pool_needs_a_worker():
    with pytest.raises(ValueError, match="at least 1 worker, got 0"):
        WorkerPool(size=0)


def test_workers_are_reused_between_calls_and_never_outnumber_the_slots():
    pool = WorkerPool(size=2)
    threads = set()  # the Thread objects themselves: kept alive, so never confused with a new one
    for _ in range(50):
        future, _ = pool.submit(lambda d: threading.current_thread(), timeout=5)
        threads.add(future.result(timeout=5))
    assert len(threads) == 1  # one thread served every call, one after the other
    futures = [pool.submit(lambda d: time.sleep(0.05), timeout=5)[0] for _ in range(10)]
    for future in futures:
        future.result(timeout=5)
    assert pool.stats()["threads"] <= 2


def test_a_call_sees_its_deadline_and_the_run_deadline_caps_it():
    from reinloop.tools.pool import call_deadline, seconds_left

    pool = WorkerPool()
    soon = time.monotonic() + 0.5
    future, deadline = pool.submit(lambda d: (call_deadline(), seconds_left(60)), timeout=30, deadline=soon)
    seen, left = future.result(timeout=5)
    assert deadline == soon and seen == soon and 0 < left <= 0.5
    assert call_deadline() is None and seconds_left(7) == 7  # outside a call: no deadline


def test_waiting_for_a_worker_never_outlasts_the_calls_deadline():
    release = threading.Event()
    pool = WorkerPool(size=1)
    pool.submit(lambda d: release.wait(10), timeout=None)  # holds the only slot, with no deadline
    began = time.monotonic()
    with pytest.raises(WorkersExhausted, match="stayed busy until this call's deadline"):
        pool.submit(lambda d: "late", timeout=0.3)
    assert time.monotonic() - began < 2
    release.set()


def test_the_runs_deadline_bounds_every_call_and_later_calls_do_not_start():
    started = []
    release = threading.Event()

    def hang(x: str) -> str:
        started.append(x)
        release.wait(30)
        return "late"

    hung = make_tool(hang, "hung", timeout=None)
    executor = ToolExecutor(Limits(tool_timeout=None), deadline=time.monotonic() + 0.5)
    began = time.monotonic()
    results = executor.run([ToolCall(hung, {"x": str(i)}, f"c{i}", i) for i in range(3)])
    assert time.monotonic() - began < 2
    assert started == ["0"]  # the later calls were not started: the run was out of time
    assert [r.status for r in results] == ["timeout"] * 3
    assert "the run's time limit (max_seconds) ran out" in results[0].observation
    assert results[1].observation == "ERROR: ToolTimeout: hung was not started: the run is out of time (max_seconds)."
    assert executor.pool.stats()["overdue"] == 1  # a thread that cannot be stopped is counted
    release.set()


def test_a_call_waits_for_a_worker_that_comes_back_soon_after_its_deadline():
    stopping = make_tool(lambda x: time.sleep(0.4) or "late", "stopping", timeout=0.1)  # returns 0.3 s late
    executor = ToolExecutor(pool=WorkerPool(size=1))
    assert executor.run_one(stopping, {"x": "a"}).status == "timeout"
    assert executor.run_one(make_tool(lambda x: "fine", "other"), {"x": "a"}).observation == "fine"


def test_one_off_calls_leave_no_worker_thread_behind():
    before = threading.active_count()
    for i in range(50):
        assert run_tool(make_tool(lambda x: "ok"), {"x": str(i)}).observation == "ok"
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() <= before  # not 50 idle workers waiting for calls that never come
