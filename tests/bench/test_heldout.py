"""The held-out set is frozen, its checkers tell right from wrong, and its tools do what they declare."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from benchmarks.eval import heldout
from benchmarks.eval.__main__ import followable, main
from benchmarks.eval.heldout import Desk, Task, all_tasks, judge
from benchmarks.eval.tasks import FAMILIES as DEV_FAMILIES
from reinloop.tools.options import options_of

ROOT = Path(__file__).resolve().parents[2]
TASKS = all_tasks()
LIVE_TOOLS = {"job_status", "track_parcel", "queue_status", "server_status"}


def run_steps(desk: Desk, steps) -> list[str]:
    """Each step on the desk's tools: its result, or ``Error: ...`` for a step that raises."""
    tools = {t.name: t for t in desk.catalogue().values()}
    observations = []
    for step in steps:
        try:
            observations.append(str(tools[step.tool].invoke(step.args)))
        except Exception as exc:
            observations.append(f"Error: {exc}")
    return observations


def solved(task: Task) -> Desk:
    desk = Desk(task.tools)
    run_steps(desk, task.steps)
    return desk


def test_the_set_file_is_the_frozen_one_recorded_in_benchmarks():
    recorded = re.search(r"`benchmarks/eval/heldout\.py`[^`]*sha256 `([0-9a-f]{64})`",
                         (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8"))
    assert recorded, "BENCHMARKS.md's Held-out set section must record the sha256 of benchmarks/eval/heldout.py"
    actual = hashlib.sha256((ROOT / "benchmarks/eval/heldout.py").read_bytes()).hexdigest()
    assert actual == recorded[1], (
        "benchmarks/eval/heldout.py differs from the frozen held-out set. Never change it while looking at "
        "failures; a deliberate change records the new sha256 in BENCHMARKS.md and says why there")


def test_forty_and_more_tasks_in_families_of_their_own_a_third_in_chinese():
    assert len(TASKS) >= 40
    assert len({t.id for t in TASKS}) == len({t.text for t in TASKS}) == len(TASKS)
    letters = {t.id.split("-")[0] for t in TASKS}
    assert letters == set(heldout.FAMILIES) and not letters & set(DEV_FAMILIES)
    assert all(sum(t.id.startswith(f"{f}-") for t in TASKS) >= 5 for f in heldout.FAMILIES)
    chinese = [t for t in TASKS if re.search(r"[\u4e00-\u9fff]", t.text)]
    assert len(chinese) >= len(TASKS) / 3
    assert all(set(t.tools) <= set(Desk().catalogue()) for t in TASKS)
    assert all(s.tool in t.tools for t in TASKS for s in t.steps + t.wrong_moves)  # plans use the task's own tools


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_every_checker_accepts_its_right_answers_and_refuses_its_wrong_ones(task):
    desk = solved(task)
    for answer in task.right:
        assert judge(task, answer, desk), f"{task.id} refused a right answer {answer!r}"
    for answer in task.wrong:
        assert not judge(task, answer, desk), f"{task.id} accepted a wrong answer {answer!r}"
    assert task.wrong or task.wrong_moves  # every checker is shown to refuse something
    for answer in (None, "", "   ", '{"name": "calculator", "arguments": {"expression": "1+1"}}'):
        assert not judge(task, answer, desk)


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_a_right_answer_fails_after_a_change_nobody_asked_for(task):
    for move in task.wrong_moves:
        desk = solved(task)
        assert not run_steps(desk, [move])[0].startswith("Error"), f"{task.id}: the wrong move {move} must run"
        assert not judge(task, task.right[0], desk), f"{task.id} accepted its answer after {move}"


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_words_alone_do_not_pass_where_the_desk_must_change_or_a_live_status_be_watched(task):
    fresh = Desk(task.tools)
    acts = any(options_of(fresh.catalogue()[s.tool]).side_effects or s.tool in LIVE_TOOLS for s in task.steps)
    if acts:  # the plan edits the desk or polls: saying so without doing it fails
        assert not judge(task, task.right[0], fresh)
    assert not judge(task, task.text, fresh)  # nor does echoing the task


def test_a_checker_is_strict_about_the_value_and_tolerant_about_the_wording():
    by_id = {t.id: t for t in TASKS}
    cases = {
        "U-1": (["４２．１６ km", "42.165 kilometres", "约 42.16 公里"], ["42.17 km", "42.1 km"]),
        "T-1": (["Wednesday, 15th April 2026", "2026年4月15日", "2026/4/15"], ["April 15", "2026-15-04"]),
        "T-3": (["FRIDAY.", "礼拜五"], ["Friday, not Thursday"]),
        "P-4": (["Processed today: 42 messages (queue empty)."], ["about 40"]),
        "W-6": (["AMBER - a Paper Jam"], ["amber, toner empty"]),
    }
    for task_id, (right, wrong) in cases.items():
        desk = solved(by_id[task_id])
        assert all(judge(by_id[task_id], a, desk) for a in right), task_id
        assert not any(judge(by_id[task_id], a, desk) for a in wrong), task_id


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_every_tool_is_deterministic(task):
    first, second = Desk(task.tools), Desk(task.tools)
    steps = task.steps + task.wrong_moves
    assert run_steps(first, steps) == run_steps(second, steps)
    assert first.state() == second.state() and first.effects == second.effects


def test_only_tools_declared_side_effecting_change_the_desk_and_each_change_is_logged():
    calls = [s for t in TASKS for s in t.steps + t.wrong_moves]
    declared = {name for name, t in Desk().catalogue().items() if options_of(t).side_effects}
    assert declared == {"write_file", "append_to_file", "replace_in_file", "update_contact", "cancel_order",
                        "update_order", "create_purchase_request", "reschedule_meeting", "book_room", "send_email"}
    assert declared <= {s.tool for s in calls}  # every side-effecting tool is exercised
    for step in calls:
        desk = Desk()
        before = desk.state()
        failed = run_steps(desk, [step])[0].startswith("Error")
        changed = desk.state() != before
        if step.tool in declared and not failed:
            assert changed and [name for name, _ in desk.effects] == [step.tool], step
        else:
            assert not changed and not desk.effects, step


def test_pure_tools_are_declared_cacheable_and_live_ones_are_not():
    tools = Desk().catalogue()
    cacheable = {name for name, t in tools.items() if options_of(t).cacheable}
    assert cacheable == {"calculator", "convert_length", "convert_weight", "convert_temperature", "add_days",
                         "days_between", "weekday", "translate", "spell_check"}
    assert not cacheable & (LIVE_TOOLS | {"today", "read_file", "find_contact"})


def test_a_live_status_moves_on_one_state_per_reading_and_starts_over_on_a_fresh_desk():
    desk = Desk()
    status = desk.catalogue()["job_status"]
    readings = [status.invoke({"job_id": "build-42"}) for _ in range(6)]
    assert readings[0] == "build-42: running: compiling (1/3)"
    assert readings[3:] == ["build-42: succeeded: artifact build-42.tar.gz published"] * 3
    assert desk.readings == {"job:build-42": 6} and not desk.effects
    assert Desk().catalogue()["job_status"].invoke({"job_id": "build-42"}) == readings[0]
    with pytest.raises(ValueError, match="no job 'build-9'; known: build-42, export-7"):
        status.invoke({"job_id": "build-9"})


def test_tool_errors_say_what_was_wrong_and_what_is_valid():
    tools = Desk().catalogue()
    with pytest.raises(ValueError, match=r"'2026-02-30' is not a valid date \(day is out of range for month\)"):
        tools["weekday"].invoke({"day": "2026-02-30"})
    with pytest.raises(ValueError, match="unknown length unit 'furlong'; use one of mm, cm, m, km, in, ft, yd, mi"):
        tools["convert_length"].invoke({"value": 1, "from_unit": "furlong", "to_unit": "m"})
    with pytest.raises(ValueError, match="'2pm' is not a time; write it as HH:MM"):
        tools["book_room"].invoke({"room": "B", "day": "2026-03-19", "start": "2pm", "end": "15:00"})
    assert tools["convert_weight"].invoke({"value": 3, "from_unit": "斤", "to_unit": "公斤"}) == "3 jin = 1.5 kg"


def test_the_simulated_contestants_solve_every_heldout_task_they_can_follow(capsys):
    assert main(["--set", "heldout", "--tasks", "U,R,M,Q-1,S-3", "--fault-rate", "0",
                 "--contestants", "reinloop,create_agent", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {name: r["endings"]["answer"] for name, r in report.items()} == {"reinloop": 20, "create_agent": 20}
    assert all(r["success_rate"] == 1.0 for r in report.values())
    left_out = [t.id for t in TASKS if not followable(t)]
    assert left_out == ["P-1", "P-2", "P-3", "P-4", "P-5", "Q-2", "S-1", "S-2", "S-4", "S-5", "S-6"]


def test_both_loops_run_a_heldout_task_against_an_endpoint_and_are_judged_by_its_checker(openai_server, capsys,
                                                                                         tmp_path):
    from tests.openai_server import completion

    ask = "Which room, which day and what time?"
    openai_server.responses += [completion(ask), completion("Room A is booked for you.")]
    save = tmp_path / "runs.jsonl"
    assert main(["--set", "heldout", "--tasks", "Q-2", "--model", "openai:test-model", "--base-url",
                 openai_server.base_url, "--contestants", "reinloop,create_agent", "--save", str(save), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert len(openai_server.requests) == 2  # a task without plan steps still runs against a real endpoint
    assert report["reinloop"]["success_rate"] == 1.0  # it asked
    assert report["create_agent"]["success_rate"] == 0.0  # it claimed a booking it never made
    assert main(["--report-from", str(save)]) == 0  # the saved verdicts: the desk the checker read is gone
    out = capsys.readouterr().out
    assert "| Q: ask the user | 1/1 | 0/1 |" in out


def test_set_picks_the_heldout_families_and_dev_stays_the_default(capsys):
    assert main(["--set", "heldout", "--tasks", "A", "--json"]) == 2
    assert "no task or family 'A'; families are U, T, R, M, P, W, Q, S" in capsys.readouterr().err
    assert main(["--tasks", "U", "--json"]) == 2
    assert "families are A, B, C, D, E, F, H" in capsys.readouterr().err
