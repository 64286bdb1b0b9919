"""Exceptions raised by reinloop.

Errors are split by who has to act::

    ReinloopError                 base of everything reinloop raises
    ├── ConfigurationError        the developer: bad arguments to build_graph, the CLI, a tool
    │   ├── SettingError          a RunSpec setting refused its value (which, why, the value)
    │   │   ├── TelemetrySetupError   telemetry asked for, the OpenTelemetry SDK not installed
    │   │   └── TaskTooLargeError     a task that leaves the steps no room in the prompt budget
    │   ├── DuplicateToolError    two tools share a name
    │   ├── UnknownToolError      a built-in tool name that does not exist
    │   ├── ModelSetupError       a model string or endpoint that cannot be used (no API key, ...)
    │   ├── ToolDatabaseError     a tool database that is the run database (--db-tool = --db)
    │   └── UsageError            the command line: a value refused before the run started (exit 2)
    ├── RunError                  the run: something went wrong while the loop was running
    │   ├── ModelCallError        the model endpoint failed and retries did not help
    │   └── RunStoppedError       a stored run stopped on a failure; its progress is saved
    ├── StorageError              the run database: missing, corrupted, locked, read-only
    │   ├── ThreadNotFoundError   no run with that thread id
    │   ├── NotResumableError     the run is finished or has nothing to resume
    │   ├── StoredDataError       a stored value reinloop does not read (a type, a shape, a code reference)
    │   └── NotReplayableError    the run's model replies are no longer all stored (it was pruned)
    └── ScriptExhaustedError      reinloop.testing: a scripted model ran out of replies

Mistakes the *model* makes inside a run (bad JSON, unknown tool, wrong arguments,
a tool that raises) are never raised: they become observations fed back to the
model and are counted by the guards.

An exception carries its facts as fields (the status code, the endpoint,
whether retrying could help, the thread ...) and its message is made from
them: code decides on the fields, never on the message text.
"""

from __future__ import annotations

from typing import Literal


HTTP_FIXES = {
    400: "the request was rejected: check the model name, the protocol (try --protocol json) and the parameters",
    401: "the API key was refused: check OPENAI_API_KEY (or the provider's key variable)",
    403: "the API key may not use this model: check the key's permissions",
    404: "the model or endpoint does not exist: check --model and --base-url",
    413: "the prompt is too large: lower --max-prompt-tokens or --window-steps",
    422: "the request was rejected: check the model name and parameters",
}
"""What to do about an HTTP status a model endpoint answered, for :class:`ModelCallError`'s message."""

CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
"""Error codes an endpoint gives for a prompt longer than the model's context: OpenAI's ``code`` (and compatible
servers'), and llama.cpp's server's error ``type`` (its ``code`` is the HTTP status)."""

StoppedBy = Literal["permanent", "attempts", "deadline"]
"""Why a failed model call was not tried again: the failure cannot pass, the attempts or the run's time ran out."""



def counted(n: int, noun: str) -> str:
    """``1 step``, ``2 steps``: a count with its noun, plural when it is not one."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class ReinloopError(Exception):
    """Base class of every exception reinloop raises."""

    def __reduce__(self) -> tuple[object, ...]:
        # fields are keyword arguments, which Exception's own pickling drops: a batch
        # worker's error must reach its parent process whole
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(cls: type[ReinloopError], args: tuple[object, ...], fields: dict[str, object]) -> ReinloopError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(fields)
    return error


class ConfigurationError(ReinloopError, ValueError):
    """The developer must fix an argument, option or tool definition."""


class DuplicateToolError(ConfigurationError):
    """Two tools were registered under the same name (``name``; ``sources``: where each came from, when known)."""

    def __init__(self, message: str, *, name: str = "", sources: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.sources = sources


class SettingError(ConfigurationError):
    """A run setting refused its value: ``owner`` and ``name`` say which (``"Limits"``, ``"max_steps"``).

    ``reason`` says what it must be (``"must be positive"``), ``value`` what it was given (shown
    when ``shown``), ``none`` how ``None`` is offered: ``"or"`` as another valid value (``must be
    a whole number or None``), ``"off"`` as the way to switch the setting off. ``sentence`` is the
    sentence the setting stands in, when it is not at its start. The message is :meth:`worded` in
    Python's names; the command line words it with the flag instead (``--max-steps``, ``none``).
    """

    def __init__(self, owner: str, name: str, reason: str, *, value: object = None, shown: bool = True,
                 none: Literal["", "or", "off"] = "", sentence: str = "{setting} {reason}") -> None:
        self.owner, self.name, self.reason, self.value = owner, name, reason, value
        self.shown, self.none, self.sentence = shown, none, sentence
        super().__init__(self.worded(f"{owner}.{name}"))

    def worded(self, setting: str, none: str = "None") -> str:
        """The message with the setting called ``setting`` and Python's ``None`` called ``none``."""
        reason = self.reason + (f" or {none}" if self.none == "or" else "")
        reason += f", got {self.value!r}" if self.shown else ""
        reason += f"; use {none} to switch it off" if self.none == "off" else ""
        return self.sentence.replace("{setting}", setting).replace("{reason}", reason)


class UnknownToolError(ConfigurationError):
    """A tool name that reinloop does not know."""


class ModelSetupError(ConfigurationError):
    """A model that cannot be created or reached as configured (``key_variable``: the API key it lacks, if that is why)."""

    def __init__(self, message: str, *, model: str, key_variable: str | None = None) -> None:
        super().__init__(message)
        self.model = model
        self.key_variable = key_variable


class ToolDatabaseError(ConfigurationError):
    """The database of ``sql_query``/``db_insert`` is reinloop's own run database (``path`` names it)."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class StoredNameError(ConfigurationError):
    """A replay or resume would use what the run database alone names (``field``: MCP servers, a sandbox ...);
    a flag must say so."""

    def __init__(self, thread_id: str, field: str, named: str, flag: str, command: str = "replay") -> None:
        self.thread_id, self.field, self.named, self.flag = thread_id, field, named, flag
        super().__init__(f"run {thread_id!r} stored spec.{field} = {named}; a {command} does not use what only the "
                         f"run database names: pass {flag}")


class UsageError(ConfigurationError):
    """A command-line value refused before the run started (an unknown tool, ``read_file`` without ``--sandbox``).

    ``cause`` is the library's own error; the message says it in flag terms. The ``reinloop`` command exits 2.
    """

    def __init__(self, message: str, *, cause: ConfigurationError) -> None:
        super().__init__(message)
        self.cause = cause


class TelemetrySetupError(SettingError):
    """Telemetry was switched on (``RunSpec.telemetry``, ``--otel``) but ``missing``, an OpenTelemetry module, is not installed."""

    def __init__(self, missing: str) -> None:
        self.missing = missing
        super().__init__("RunSpec", "telemetry", f"needs the OpenTelemetry SDK, and {missing!r} is not installed",
                         shown=False, sentence="telemetry {reason}: pip install 'reinloop[otel]' (or run without --otel / {setting})")


class TaskTooLargeError(SettingError):
    """A task too large for the prompt budget (``Memory.max_prompt_tokens``): refused before the run, never cut.

    ``task_tokens`` the task's size, ``fixed_tokens`` the system prompt's and tools', ``reserved`` the least room
    the steps need, ``budget`` the budget, ``needed`` the least budget that holds them all, ``counter`` the count's encoding.
    """

    def __init__(self, task_tokens: int, fixed_tokens: int, reserved: int, budget: int, counter: str) -> None:
        self.task_tokens, self.fixed_tokens, self.reserved, self.budget = task_tokens, fixed_tokens, reserved, budget
        self.needed, self.counter = task_tokens + fixed_tokens + reserved, counter
        super().__init__(
            "Memory", "max_prompt_tokens", f"raise it to at least {self.needed}, or give the long text as a file the run "
            "reads (read_file, search_docs)", shown=False,
            sentence=f"the task is {task_tokens:,} tokens ({counter}): with the system prompt and tools ({fixed_tokens:,}) "
                     f"and {reserved} for the steps it needs {self.needed:,}, more than the prompt budget {{setting}}"
                     f"={budget:,}; it is refused rather than cut, since a cut task crowds out the tool results; {{reason}}")


class RunError(ReinloopError):
    """A run failed in a way the loop could not turn into an observation."""

    @property
    def problem(self) -> str:
        """What went wrong, without advice on resuming (whoever stores the run adds its own)."""
        return str(self)


class ModelCallError(RunError):
    """The model endpoint failed permanently, or transiently beyond its retries.

    ``status_code`` is the HTTP status the endpoint answered (``None``: no answer,
    e.g. a timeout); ``param`` the request field it named as the cause, if it
    did; ``code`` the error code it gave (OpenAI's ``context_length_exceeded``);
    ``retryable`` whether the failure is of a kind that may pass (429, 5xx,
    timeouts, malformed replies); ``stopped_by`` why it was not tried again,
    after ``attempts`` calls. ``detail`` is the client's own text (escaped,
    credentials removed). A run that stopped on a retryable failure is saved and
    can be resumed (``resumable``).
    """

    def __init__(
        self,
        *,
        endpoint: str,
        error_type: str,
        detail: str = "",
        status_code: int | None = None,
        param: str | None = None,
        code: str | None = None,
        retryable: bool = False,
        stopped_by: StoppedBy = "permanent",
        attempts: int = 1,
        next_wait: float | None = None,
        seconds_left: float | None = None,
    ) -> None:
        self.endpoint, self.error_type, self.detail = endpoint, error_type, detail
        self.status_code, self.param, self.retryable = status_code, param, retryable
        self.code = code
        self.stopped_by, self.attempts = stopped_by, attempts
        self.next_wait, self.seconds_left = next_wait, seconds_left
        super().__init__(self.problem + self.advice)

    @property
    def malformed(self) -> bool:
        """True when the endpoint answered 2xx with a body the client could not read."""
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def rejected(self) -> bool:
        """True when the endpoint refused the request itself (HTTP 400 or 422): sending the same again fails again."""
        return self.status_code in (400, 422)

    @property
    def context_exceeded(self) -> bool:
        """True when the endpoint refused the prompt as longer than the model's context (its code, or HTTP 413)."""
        return self.code in CONTEXT_CODES or self.status_code == 413

    @property
    def resumable(self) -> bool:
        """True when the run stopped on a failure that may pass: resuming it later can succeed."""
        return self.retryable and self.stopped_by != "permanent"

    @property
    def problem(self) -> str:
        """What failed and where, with the fix; without the advice on resuming."""
        detail = (self.detail or self.error_type).rstrip(". ")  # the advice follows after "; ", never ".;"
        if self.malformed:
            return f"model endpoint {self.endpoint} sent a malformed response: {self.error_type}: {detail}"
        if self.status_code is not None:
            fix = HTTP_FIXES[413] if self.context_exceeded else HTTP_FIXES.get(self.status_code, "see the provider's status page")
            return f"model endpoint {self.endpoint} answered HTTP {self.status_code}: {fix} ({detail})"
        return f"model endpoint {self.endpoint} failed: {self.error_type}: {detail}"

    @property
    def advice(self) -> str:
        """Why no further attempt was made, and that the run is saved ("" for a permanent failure)."""
        if self.stopped_by == "attempts":
            return (f"; gave up after {counted(self.attempts, 'attempt')}. "
                    "The run is saved: resume it when the endpoint is back")
        if self.stopped_by == "deadline":
            return (f"; not retrying: the next wait ({self.next_wait or 0:.1f} s) is longer than the "
                    f"{max(self.seconds_left or 0, 0):.1f} s left of max_seconds. The run is saved: resume it with more time")
        return ""


class RunStoppedError(RunError):
    """A stored run stopped on a failure (``reason``); its progress up to it is saved under ``thread_id``."""

    def __init__(self, thread_id: str, reason: str) -> None:
        self.thread_id, self.reason = thread_id, reason.rstrip(". ")  # "...: Connection error.; its progress" reads badly
        super().__init__(
            f"run {thread_id} stopped: {reason}; its progress is saved: resume it with `reinloop resume {thread_id}`"
        )

    @property
    def problem(self) -> str:
        return f"run {self.thread_id} stopped: {self.reason}"


class StorageError(ReinloopError):
    """The run database cannot be used as asked."""


class ThreadNotFoundError(StorageError, KeyError):
    """No run is stored under the given thread id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class NotResumableError(StorageError):
    """The run exists but there is nothing to resume."""


class AlreadyAnsweredError(StorageError):
    """Another process answered the calls a run waited for first (``by``: its pid, host and time); nothing was done."""

    def __init__(self, thread_id: str, step: int, by: dict[str, object]) -> None:
        self.thread_id, self.step, self.by = thread_id, step, by
        super().__init__(
            f"the calls run {thread_id!r} waited for at step {step} were already answered by another process "
            f"(pid {by.get('pid')} on {by.get('host')}); nothing was done here. `reinloop runs pending` shows what "
            "waits now")


class StoredDataError(StorageError):
    """A value in the run database is not what reinloop stores there: it was changed outside reinloop.

    ``field`` names where it is (``"runs.spec"``, ``"state.scratchpad.0.actions"``, ``"checkpoint_writes.value"``),
    ``problem`` what is wrong with it, ``thread_id`` the run it belongs to (when known). A stored value is data:
    reinloop never runs, imports or opens what one names, and refuses one it cannot read with this error.
    """

    def __init__(self, field: str, problem: str, *, thread_id: str | None = None) -> None:
        self.field, self.problem, self.thread_id = field, problem, thread_id
        run = f" of run {thread_id!r}" if thread_id else ""
        super().__init__(f"the stored {field}{run} cannot be read: {problem}; the run database was changed outside "
                         "reinloop (restore it from a copy, or delete the run with `reinloop runs delete`)")

    def at(self, field: str | None = None, *, thread_id: str | None = None) -> StoredDataError:
        """The same error, placed: ``field`` prefixed to its own, ``thread_id`` filled in when it was unknown."""
        where = f"{field}.{self.field}" if field and self.field else field or self.field
        return StoredDataError(where, self.problem, thread_id=self.thread_id or thread_id)


class NotReplayableError(StorageError):
    """A stored run cannot be replayed: its model replies are no longer all in its checkpoint history."""

    def __init__(self, thread_id: str, *, replies: int, steps: int) -> None:
        self.thread_id, self.replies, self.steps = thread_id, replies, steps
        super().__init__(
            f"run {thread_id!r} has {steps} steps but only {replies} model replies left in its checkpoint history "
            "(`reinloop runs prune` keeps only the latest checkpoints); replay needs a run that was not pruned")


class ScriptExhaustedError(ReinloopError, AssertionError):
    """A scripted test model was called more times than it has replies."""
