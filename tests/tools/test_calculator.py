"""The calculator evaluates arithmetic through an AST walk and refuses everything else quickly."""

from __future__ import annotations

import time

import pytest

from reinloop.tools.arithmetic import CalculatorError, calculator, evaluate


@pytest.mark.parametrize(
    ("expression", "expected"),
    [("(22*1.8)+32", "71.6"), ("30*2", "60"), ("24-18", "6"), ("-(2+3)*4", "-20"), ("7//2", "3"),
     ("7%4", "3"), ("2**10", "1024"), ("sqrt(16)", "4"), ("1/4", "0.25"), ("max(1, 5, 3)", "5"), ("2^3", "8")],
)
def test_calculator_evaluates_arithmetic(expression, expected):
    assert calculator.invoke({"expression": expression}) == expected


HOSTILE_OR_BROKEN = [
    ("1/0", "division by zero"),
    ("9**9**9**9", "too large"),
    ("10**100000", "too large"),
    ("__import__('os').system('echo hi')", "unknown function|unsupported syntax"),
    ("open('/etc/passwd').read()", r"unsupported syntax: call of attribute access \(\.read\)"),
    ("(1).__class__", r"attribute access \(\.__class__\)"),
    ("1 if 1 else 2", "unsupported syntax"),
    ("x + 1", r"the expression holds words \('x'\), not numbers"),
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
]
"""Code, names, syntax and sizes the calculator refuses, and arithmetic errors."""

BOMBS_AND_FOREIGN_DIGITS = [
    ("round(5, -10**9)", r"round\(\) digits -1000000000 out of range"),  # would compute 10**(10**9)
    ("round(1.5, 10**9)", r"round\(\) digits 1000000000 out of range"),
    ("((2**1000)**1000)", r"a 302-digit number\*\*1000 would have about 301030 digits"),
    ("2**1000*2**1000*2**1000*2**1000", "result is too large"),
    ("1e308*10", "result is too large"),
    ("10.0**400", "result is too large"),
    ("exp(1000)", "result is too large"),
    ("sqrt(10**999)", "result is too large"),
    ("10**999/3", "result is too large"),
    ("2**-1075", "exponent -1075 is too large"),
    ("(-8)**(1/3)", "complex number"),
    ("1j", "unsupported syntax: complex literal"),
    ("True+1", "unsupported syntax: bool literal"),
    ("min(1,2,3,4,5)", r"min\(\) takes up to 4 positional arguments"),
    ("max(x=1)", r"max\(\) takes up to 4 positional arguments"),
    ("[1]*10**9", "unsupported syntax: List"),
    ("(lambda: 1)()", "unsupported syntax"),
    ("１+１", r"non-ASCII character '１' \(U\+FF11\)"),
    ("٣+٤", r"non-ASCII character '٣' \(U\+0663\)"),
    ("1\u200b+1", r"non-ASCII character '\\u200b' \(U\+200B\)"),
    ("sqrt(" * 60 + "2" + ")" * 60, "nested too deeply"),
    ("log(0)", "math error: math domain error"),
]
"""Results that would take too long or too much memory to compute, and digits that are not ASCII."""


@pytest.mark.parametrize(("expression", "message"), HOSTILE_OR_BROKEN + BOMBS_AND_FOREIGN_DIGITS)
def test_calculator_refuses_hostile_broken_huge_or_foreign_input_quickly(expression, message):
    start = time.perf_counter()
    with pytest.raises(CalculatorError, match=message):
        evaluate(expression)
    assert time.perf_counter() - start < 1.0


def test_calculator_maps_operator_symbols_but_not_digits():
    assert calculator.invoke({"expression": "3×(4−1)÷2"}) == "4.5"
    assert calculator.invoke({"expression": "（2+3）×4"}) == "20"


def test_calculator_errors_are_observations_not_crashes():
    from reinloop.tools import run_tool

    result = run_tool(calculator, {"expression": "9**9**9**9"})
    assert result.error and result.observation == "ERROR: CalculatorError: exponent 387420489 is too large (limit 1000)"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("+".join(["1"] * 50), "50"),
        ("+".join(["1"] * 250), "250"),
        ("-".join(["1"] * 200), "-198"),
        ("*".join(["1"] * 240), "1"),
        ("+".join(["2*3"] * 80), "480"),
        ("(" + "+".join(["1"] * 120) + ")*2", "240"),
    ],
)
def test_a_long_flat_chain_is_one_level_not_nested_too_deeply(expression, expected):
    assert calculator.invoke({"expression": expression}) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "(" * 60 + "1" + ")" * 60,
        "(" * 60 + "1" + "+1)" * 60,
        "1+(" * 60 + "1" + ")" * 60,
        "-(" * 60 + "1" + ")" * 60,
        "2**" * 60 + "1",
        "abs(" * 51 + "1" + ")" * 51,
    ],
)
def test_real_nesting_beyond_the_limit_is_still_refused(expression):
    with pytest.raises(CalculatorError, match="nested too deeply"):
        evaluate(expression)


@pytest.mark.parametrize(("expression", "words"), [
    ("price /续航_hours", "'price', '续航_hours'"),  # Qwen2.5-Coder-0.5B, before it had looked anything up
    ("quantity * unit price", "'quantity', 'unit', 'price'"),
    ("round(population*10000/area)", "'population', 'area'"),
])
def test_an_expression_of_names_instead_of_figures_is_told_to_look_the_figures_up_first(expression, words):
    with pytest.raises(CalculatorError, match=f"holds words \\({words}\\), not numbers") as caught:
        evaluate(expression)
    assert "find each figure first" in str(caught.value)


def test_numbers_written_with_exponents_underscores_or_hex_are_not_taken_for_words():
    assert evaluate("2e3*1") == 2000.0 and evaluate("1_000+1") == 1001 and evaluate("0x1f+1") == 32
