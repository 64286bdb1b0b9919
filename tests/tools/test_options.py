"""reinloop's tool options attach to any LangChain tool without subclassing it."""

from __future__ import annotations

import pytest
from langchain_core.tools import BaseTool, StructuredTool, tool

from reinloop.errors import ConfigurationError
from reinloop.tools import ToolOptions, builtin, calculator, configure, options_of


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def test_configure_returns_the_same_tool_with_its_options_in_metadata():
    t = StructuredTool.from_function(lambda x: x, name="same", description="d")
    assert configure(t, timeout=5, side_effects=True) is t
    assert isinstance(t, StructuredTool) and type(t) is StructuredTool  # not wrapped, not subclassed
    assert options_of(t) == ToolOptions(timeout=5, side_effects=True)
    assert t.metadata["reinloop"] is options_of(t)
    assert t.invoke({"x": "still works"}) == "still works"


def test_configure_as_a_decorator_above_tool():
    @configure(parallel_safe=True, retries=0)
    @tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    assert isinstance(shout, BaseTool)
    assert options_of(shout).parallel_safe and options_of(shout).retries == 0
    assert shout.invoke({"text": "hi"}) == "HI"


def test_configure_keeps_earlier_options_and_other_metadata():
    t = StructuredTool.from_function(lambda x: x, name="keep", description="d", metadata={"team": "search"})
    configure(t, timeout=3)
    configure(t, side_effects=True)
    assert options_of(t).timeout == 3 and options_of(t).side_effects
    assert t.metadata["team"] == "search"


def test_unconfigured_tools_get_the_defaults():
    assert options_of(echo) == ToolOptions()
    assert ToolOptions().transient == (TimeoutError, ConnectionError)


def test_options_stored_as_a_plain_dict_are_read_too():
    t = StructuredTool.from_function(lambda x: x, name="d", description="d", metadata={"reinloop": {"timeout": 2.5}})
    assert options_of(t).timeout == 2.5


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeot": 1}, "unknown tool option.s. timeot; valid options: timeout, retries, transient"),
        ({"timeout": 0}, "timeout must be a positive number of seconds, got 0"),
        ({"timeout": "5"}, "timeout must be a positive number"),
        ({"retries": -1}, "retries must be an integer >= 0, got -1"),
        ({"transient": ("ValueError",)}, "transient must be exception classes"),
        ({"validator": "non-empty"}, "validator must be a callable"),
        ({"approval": "yes"}, r"approval must be True, False or a callable \(args\) -> bool"),
        ({"cacheable": True, "side_effects": True}, "cacheable=True and side_effects=True contradict each other"),
    ],
)
def test_bad_options_are_refused_with_the_valid_choices(options, message):
    t = StructuredTool.from_function(lambda x: x, name="bad", description="d")
    with pytest.raises(ConfigurationError, match=message):
        configure(t, **options)
    assert options_of(t) == ToolOptions()  # nothing half-applied


def test_configure_refuses_a_plain_function():
    with pytest.raises(ConfigurationError, match=r"decorate the function with @tool first"):
        configure(lambda x: x, timeout=1)


def test_a_single_transient_class_is_accepted():
    t = configure(StructuredTool.from_function(lambda x: x, name="one", description="d"), transient=OSError)
    assert options_of(t).transient == (OSError,)


def test_configuring_a_builtin_copy_leaves_the_others_alone():
    mine = configure(builtin("calculator"), timeout=1)
    assert options_of(mine).timeout == 1
    assert options_of(calculator).timeout is None
    assert options_of(builtin("calculator")).timeout is None


def test_effective_values_fall_back_to_the_run_limits():
    assert ToolOptions().effective_timeout(30.0) == 30.0
    assert ToolOptions(timeout=2).effective_timeout(30.0) == 2
    assert ToolOptions().effective_retries(None) == 0
    assert ToolOptions(retries=0).effective_retries(2) == 0
    assert ToolOptions().effective_retries(2) == 2


def test_no_tool_is_cacheable_unless_declared_and_only_the_pure_built_ins_are():
    from reinloop.tools import builtins

    assert ToolOptions().cacheable is False and options_of(echo).cacheable is False
    assert options_of(configure(StructuredTool.from_function(lambda x: x, name="p", description="d"),
                                cacheable=True)).cacheable
    names = "calculator,db_query,get_weather,translate,wait"
    assert {t.name for t in builtins(names) if options_of(t).cacheable} == {"calculator", "translate"}
