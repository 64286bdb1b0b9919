"""Named profiles: rule sets tuned for one kind of model, off by default, every rule its own switch.

The core loop holds only mechanisms that are right for any tool and any language. A rule found by watching
one kind of model fail lives in a profile, with the tasks it was tuned on and its effect on a held-out set
written beside it, and a caller turns it on by name::

    from reinloop.protocols.profiles import small_model
    graph = build_graph(model, tools, answers=small_model())
"""

from __future__ import annotations

from .small_model import PROFILES, small_model

__all__ = ["PROFILES", "small_model"]
