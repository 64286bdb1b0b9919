"""A calculator the model can drive without being able to hang the process.

Expressions are parsed with :mod:`ast` and walked node by node; nothing is ever
passed to ``eval``. Only numbers, the arithmetic operators and a short list of
math functions are allowed, and every operation that can explode (powers,
factorials, huge literals, deep nesting) is bounded before it runs, so
``9**9**9**9`` is refused in microseconds instead of eating the CPU.

Nesting is bounded where it is real: parentheses, function calls, unary signs
and powers, each at most :data:`MAX_DEPTH` deep. A flat chain of one
precedence (``1+1+…+1``, ``2*3*…*7``) is one level however long it is: the
parser nests it to the left, and the walk takes it as a list, not a tower.
"""

from __future__ import annotations

import ast
import math
import re
import operator
from collections.abc import Callable
from typing import Any

from langchain_core.tools import tool
from pydantic import BaseModel, Field

from .options import configure

MAX_EXPRESSION_CHARS = 500
MAX_DEPTH = 50
MAX_EXPONENT = 1000
MAX_RESULT_DIGITS = 1000


class CalculatorError(ValueError):
    """The expression cannot be evaluated; the message says why."""


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CHAINS: tuple[frozenset[type[ast.operator]], ...] = (
    frozenset({ast.Add, ast.Sub}),
    frozenset({ast.Mult, ast.Div, ast.FloorDiv, ast.Mod}),
)
"""Left-associative operators of one precedence: ``a+b-c+d`` is a chain, not a nesting."""

_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "floor": math.floor,
    "ceil": math.ceil,
    "log": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "min": min,
    "max": max,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


_SYMBOLS = str.maketrans({"×": "*", "÷": "/", "−": "-", "（": "(", "）": ")"})
"""Operator symbols models like to write, mapped to ASCII (digits are never mapped)."""

ALLOWED = "use numbers, + - * / // % **, parentheses and the listed functions"


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return f"unknown name {node.id!r}"
    if isinstance(node, ast.Attribute):
        return f"attribute access (.{node.attr})"
    if isinstance(node, ast.Constant):
        return f"{type(node.value).__name__} literal {node.value!r:.20}"
    if isinstance(node, ast.Call):
        return f"call of {_describe(node.func)}"
    return f"{type(node).__name__} expression"


def _too_big(value: Any) -> bool:
    if isinstance(value, int):
        return value.bit_length() > MAX_RESULT_DIGITS * 3.33
    return isinstance(value, float) and math.isinf(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 20 else f"a {len(text)}-digit number"


def _check_power(base: Any, exponent: Any) -> None:
    if abs(exponent) > MAX_EXPONENT:
        raise CalculatorError(f"exponent {_short(exponent)} is too large (limit {MAX_EXPONENT})")
    if isinstance(base, int) and isinstance(exponent, int) and base not in (0, 1, -1):
        digits = abs(exponent) * math.log10(abs(base))
        if digits > MAX_RESULT_DIGITS:
            raise CalculatorError(
                f"{_short(base)}**{exponent} would have about {digits:.0f} digits (limit {MAX_RESULT_DIGITS})"
            )


def _check_round(args: list[Any]) -> None:
    # round(5, -10**9) computes 10**(10**9) inside CPython: bound the digits first.
    if len(args) == 2 and isinstance(args[1], int) and abs(args[1]) > MAX_RESULT_DIGITS:
        raise CalculatorError(f"round() digits {_short(args[1])} out of range (limit ±{MAX_RESULT_DIGITS})")


def _chain(node: ast.BinOp) -> tuple[ast.AST, list[tuple[ast.operator, ast.AST]]]:
    """``a+b-c`` as ``(a, [(+, b), (-, c)])``: the left spine of one precedence, unnested."""
    group = next((g for g in _CHAINS if type(node.op) in g), frozenset())
    rest: list[tuple[ast.operator, ast.AST]] = [(node.op, node.right)]
    left = node.left
    while isinstance(left, ast.BinOp) and type(left.op) in group:
        rest.append((left.op, left.right))
        left = left.left
    return left, rest[::-1]


def _apply(op: ast.operator, left: Any, right: Any) -> Any:
    if isinstance(op, ast.Pow):
        _check_power(left, right)
    result = _BINARY[type(op)](left, right)
    if isinstance(result, complex):
        raise CalculatorError("result is a complex number")
    if _too_big(result):
        raise CalculatorError("result is too large")
    return result


def _paren_depth(text: str) -> int:
    """The deepest parenthesis nesting of ``text`` (the parser drops parentheses from the tree)."""
    depth = deepest = 0
    for char in text:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    return deepest


class _Evaluator:
    def __init__(self) -> None:
        self.depth = 0

    def eval(self, node: ast.AST) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalculatorError(f"expression is nested too deeply (limit {MAX_DEPTH} levels)")
        try:
            return self._eval(node)
        finally:
            self.depth -= 1

    def _eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return self.eval(node.body)
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            if _too_big(node.value):
                raise CalculatorError("number is too large")
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            first, rest = _chain(node)
            result = self.eval(first)
            for op, operand in rest:
                result = _apply(op, result, self.eval(operand))
            return result
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](self.eval(node.operand))
        if isinstance(node, ast.Name) and node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self._call(node)
        raise CalculatorError(f"unsupported syntax: {_describe(node)}; {ALLOWED}")

    def _call(self, node: ast.Call) -> Any:
        name = node.func.id  # type: ignore[attr-defined]
        if name not in _FUNCTIONS:
            raise CalculatorError(
                f"unknown function {name!r}; allowed: {', '.join(sorted(_FUNCTIONS))}"
            )
        if node.keywords or len(node.args) > 4:
            raise CalculatorError(f"{name}() takes up to 4 positional arguments")
        args = [self.eval(a) for a in node.args]
        if name == "round":
            _check_round(args)
        result = _FUNCTIONS[name](*args)
        if _too_big(result):
            raise CalculatorError("result is too large")
        return result


_WORD = re.compile(r"(?<![\w.])[^\W\d]\w*")


def named_quantities(text: str) -> list[str]:
    """The words of ``text`` that are neither a function nor a constant of the calculator ("price", "续航_hours"):
    a model writing the names of figures it has not looked up yet."""
    return [w for w in dict.fromkeys(_WORD.findall(text)) if w not in _FUNCTIONS and w not in _CONSTANTS]


def _words_error(words: list[str]) -> CalculatorError:
    return CalculatorError(
        f"the expression holds words ({', '.join(repr(w) for w in words[:4])}), not numbers; the calculator "
        "computes with the figures themselves: find each figure first (with a tool that looks it up), "
        "then write the numbers into the expression")


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression safely; raises :class:`CalculatorError`."""
    text = expression.strip()
    if not text:
        raise CalculatorError("the expression is empty")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(
            f"expression is {len(text)} characters long (limit {MAX_EXPRESSION_CHARS})"
        )
    text = text.translate(_SYMBOLS)
    if not text.isascii():
        if words := named_quantities(text):
            raise _words_error(words)
        bad = next(c for c in text if not c.isascii())
        raise CalculatorError(
            f"non-ASCII character {bad!r} (U+{ord(bad):04X}) in the expression; "
            "use ASCII digits and operators only"
        )
    text = text.replace("^", "**")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        if words := named_quantities(text):
            raise _words_error(words) from exc
        raise CalculatorError(f"not a valid expression: {text!r}") from exc
    if _paren_depth(text) > MAX_DEPTH:
        raise CalculatorError(f"expression is nested too deeply (limit {MAX_DEPTH} levels)")
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    names = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called
                    and n.id not in _CONSTANTS), key=lambda n: n.col_offset)
    if names:
        raise _words_error(list(dict.fromkeys(n.id for n in names)))
    try:
        return _Evaluator().eval(tree)
    except ZeroDivisionError as exc:
        raise CalculatorError("division by zero") from exc
    except OverflowError as exc:
        raise CalculatorError("result is too large") from exc
    except (TypeError, ValueError) as exc:
        if isinstance(exc, CalculatorError):
            raise
        raise CalculatorError(f"math error: {exc}") from exc


def format_number(value: int | float) -> str:
    """Integers as-is, floats without binary noise (22*1.8+32 -> 71.6)."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.12g}"
    return str(value)


class CalculatorInput(BaseModel):
    """Arguments of the calculator tool."""

    expression: str = Field(
        description=(
            "Arithmetic expression of the figures to compute. Supports + - * / // % ** and "
            "parentheses, and sqrt, abs, round, floor, ceil, log, log10, exp, sin, cos, "
            "tan, min, max, pi, e."
        ),
        min_length=1,
        max_length=MAX_EXPRESSION_CHARS,
    )


@configure(parallel_safe=True, transient=(), cacheable=True, refuse_examples=True)  # pure: same expression, same number
@tool("calculator", args_schema=CalculatorInput)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression. Use it for every calculation instead of computing in your head."""
    return format_number(evaluate(expression))
