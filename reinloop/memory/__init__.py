"""Memory: what of the run goes into the next prompt, and how it is counted."""

from .tokens import count_message_tokens, estimate_tokens

__all__ = ["count_message_tokens", "estimate_tokens"]
