"""The public API is exactly what ``reinloop.__all__`` lists, sorted."""

from __future__ import annotations

import importlib
import reinloop


def test_all_is_sorted_and_complete():
    assert reinloop.__all__ == sorted(reinloop.__all__)
    public = {name for name in dir(reinloop) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(reinloop, name)).__name__ == "module"}
    assert public - modules == set(reinloop.__all__)


def test_every_public_name_has_a_docstring():
    for name in reinloop.__all__:
        assert getattr(reinloop, name).__doc__, name


def test_every_public_name_comes_from_this_package_and_the_roles_are_exported():
    import sys
    from pathlib import Path

    home = Path(reinloop.__file__).parent
    for name in reinloop.__all__:
        module = sys.modules[getattr(reinloop, name).__module__]
        assert Path(module.__file__).is_relative_to(home), (name, module.__file__)
    assert {"run", "resume", "list_runs", "batch", "RunSpec", "Outcome", "Limits", "Memory", "RetryPolicy"} <= set(reinloop.__all__)


def test_the_tools_package_exports_a_sorted_list_without_the_demo_tools():
    import reinloop.tools

    assert reinloop.tools.__all__ == sorted(reinloop.tools.__all__)
    assert not {"db_query", "get_weather", "translate", "GLOSSARY"} & set(reinloop.tools.__all__)
    for name in reinloop.tools.__all__:
        assert getattr(reinloop.tools, name) is not None, name


def record_types(hint, found):
    """The TypedDicts ``hint`` is or holds, nested ones included."""
    from typing import get_args, get_type_hints, is_typeddict

    if is_typeddict(hint) and hint not in found:
        found.add(hint)
        for field in get_type_hints(hint).values():
            record_types(field, found)
    for arg in get_args(hint):
        record_types(arg, found)
    return found


def test_every_record_type_a_step_holds_is_exported():
    from reinloop.state import Step

    names = {t.__name__ for t in record_types(Step, set())}
    assert names >= {"Step", "Action", "Fallback"}  # step["fallbacks"] is a list of Fallback
    assert names <= set(reinloop.__all__)
    assert reinloop.Fallback is importlib.import_module("reinloop.models.fallback").Fallback


def test_every_error_reinloop_raises_can_be_caught_by_its_top_level_name():
    errors = importlib.import_module("reinloop.errors")
    raised = {name for name, value in vars(errors).items()
              if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == errors.__name__}
    assert raised <= set(reinloop.__all__), sorted(raised - set(reinloop.__all__))
    assert reinloop.TaskTooLargeError is errors.TaskTooLargeError
