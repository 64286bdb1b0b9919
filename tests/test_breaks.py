"""BreakAnswer: a resume's answer to a break, declared once for resume() and `reinloop resume`."""

from __future__ import annotations

import dataclasses

from reinloop.runs.breaks import BreakAnswer
from reinloop.cli.app import build_parser
from reinloop.cli.options import break_answer

GIVEN = BreakAnswer(extra_steps=2, extra_seconds=1.5, extra_tokens=3, extra_cost=0.25, hint="use the table", abort=True)


def test_every_break_answer_field_is_a_resume_flag():
    argv = ["resume", "t1"]
    for f in dataclasses.fields(BreakAnswer):
        flag = "--" + f.name.replace("_", "-")
        argv += [flag] if f.type == "bool" else [flag, str(getattr(GIVEN, f.name))]
    answer = break_answer(build_parser().parse_args(argv))
    assert answer == GIVEN
    assert all(getattr(answer, f.name) != f.default for f in dataclasses.fields(BreakAnswer))


def test_resume_keywords_split_into_the_answer_and_the_spec_changes():
    answer, changes = BreakAnswer.split({"extra_steps": 5, "hint": "h", "limits": {"max_steps": 20}, "model": "m"})
    assert answer == BreakAnswer(extra_steps=5, hint="h")
    assert changes == {"limits": {"max_steps": 20}, "model": "m"}


def test_an_answer_of_defaults_says_nothing_and_continues_unchanged():
    assert not BreakAnswer().given and not BreakAnswer(hint="").given
    assert BreakAnswer().payload() == {"action": "continue", "extra_steps": 0, "extra_seconds": 0.0,
                                       "extra_tokens": 0, "extra_cost": 0.0}


def test_an_abort_answer_carries_nothing_else():
    assert GIVEN.given and GIVEN.payload() == {"action": "abort"}
    assert BreakAnswer(extra_steps=1, hint="h").payload()["hint"] == "h"
