"""What the operator tells a run paused at a break: raise its limits, give a hint, or abort it.

:class:`BreakAnswer` is declared once; ``resume(thread, extra_steps=5, hint=...)``
takes its fields as keywords beside the :class:`~reinloop.RunSpec` changes, and
``reinloop resume`` has one flag per field (``extra_steps`` -> ``--extra-steps``).
This module imports no LangChain.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class BreakAnswer:
    """The operator's answer to a break; the defaults answer nothing (a run cut off by a crash takes only those)."""

    extra_steps: int = field(default=0, metadata={"help": "raise the step limit by N", "metavar": "N"})
    extra_seconds: float = field(default=0.0, metadata={"help": "raise the time limit by S seconds", "metavar": "S"})
    extra_tokens: int = field(default=0, metadata={"help": "raise the token budget by N", "metavar": "N"})
    extra_cost: float = field(default=0.0, metadata={"help": "raise the cost budget by USD dollars", "metavar": "USD"})
    hint: str | None = field(default=None, metadata={"help": "a hint shown to the model on its next call"})
    abort: bool = field(default=False, metadata={"help": "end the paused run as broken"})

    @classmethod
    def split(cls, options: Mapping[str, Any]) -> tuple[BreakAnswer, dict[str, Any]]:
        """The answer among ``options`` (a resume's keywords), and the rest: the spec's changes."""
        names = {f.name for f in dataclasses.fields(cls)}
        answer = cls(**{k: v for k, v in options.items() if k in names})
        return answer, {k: v for k, v in options.items() if k not in names}

    @property
    def given(self) -> bool:
        """True when it says anything (a limit raised, a hint, an abort)."""
        return any(getattr(self, f.name) for f in dataclasses.fields(self))

    def payload(self) -> dict[str, Any]:
        """The ``Command(resume=...)`` value the guard reads (:func:`reinloop.nodes.guard.read_resume`)."""
        if self.abort:
            return {"action": "abort"}
        extra = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name.startswith("extra_")}
        return {"action": "continue", **extra, **({"hint": self.hint} if self.hint else {})}
