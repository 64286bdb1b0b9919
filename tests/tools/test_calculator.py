"""The calculator evaluates arithmetic through an AST walk and refuses everything else quickly."""

from __future__ import annotations

import time

import pytest

from reinloop.tools.calculator import CalculatorError, calculator, evaluate


@pytest.mark.parametrize(
    ("expression", "expected"),
    [("(22*1.8)+32", "71.6"), ("30*2", "60"), ("24-18", "6"), ("-(2+3)*4", "-20"), ("7//2", "3"),
     ("7%4", "3"), ("2**10", "1024"), ("sqrt(16)", "4"), ("1/4", "0.25"), ("max(1, 5, 3)", "5"), ("2^3", "8")],
)
def test_calculator_evaluates_arithmetic(expression, expected):
    assert calculator.invoke({"expression": expression}) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1/0", "division by zero"),
        ("9**9**9**9", "too large"),
        ("10**100000", "too large"),
        ("__import__('os').system('echo hi')", "unknown function|unsupported syntax"),
        ("open('/etc/passwd').read()", r"unsupported syntax: call of attribute access \(\.read\)"),
        ("(1).__class__", r"attribute access \(\.__class__\)"),
        ("1 if 1 else 2", "unsupported syntax"),
        ("x + 1", "unknown name 'x'; use numbers"),
        ("٣+٤", "ASCII"),
        ("(" * 100 + "1" + "+1)" * 100, "nested too deeply"),
        ("(" * 5000 + "1" + ")" * 5000, "characters long"),
        ("-" * 100 + "1", "nested too deeply"),
        ("(" * 240 + "1" + ")" * 240, "not a valid expression"),
        ("1+", "not a valid expression"),
        ("", "empty"),
        ("sqrt(-1)", "math error"),
        ("9" * 600, "characters long"),
        ("'a' * 10", "unsupported syntax: str literal"),
    ],
)
def test_calculator_refuses_hostile_or_broken_input_quickly(expression, message):
    start = time.perf_counter()
    with pytest.raises(CalculatorError, match=message):
        evaluate(expression)
    assert time.perf_counter() - start < 1.0
