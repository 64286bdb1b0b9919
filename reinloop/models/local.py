"""The base of reinloop's own chat models, which run in this process and write one reply per call.

:class:`~reinloop.testing.ScriptedChatModel` (a script), :class:`~reinloop.models.simulation.SimulatedModel`
(a plan with seeded faults) and the served demo's planning model differ only in how
they choose a reply: each says it in :meth:`LocalChatModel.reply`; turning it into
LangChain's ``ChatResult`` and reading the call's tags is done here, once.
"""

from __future__ import annotations

from typing import Any, ClassVar

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class LocalChatModel(BaseChatModel):
    """A chat model that runs here and answers each call with the one message :meth:`reply` writes."""

    reinloop_local: ClassVar[bool] = True
    """Runs on this machine: its calls cost nothing (:mod:`reinloop.models.pricing`)."""

    def reply(self, messages: list[BaseMessage], tags: frozenset[str], options: dict[str, Any]) -> AIMessage:
        """The reply to ``messages``; ``tags`` are the call's (the summarizer's own), ``options`` its keywords
        (``tools``, ``max_tokens`` ...)."""
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tags = frozenset(run_manager.tags or ()) if run_manager is not None else frozenset()
        return ChatResult(generations=[ChatGeneration(message=self.reply(messages, tags, kwargs))])
