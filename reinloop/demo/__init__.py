"""The demo: the seeds' example agents (:mod:`.scenarios`, ``reinloop demo``) and their toy tools (:mod:`.tools`).

The toy tools (``get_weather``, ``db_query``, ``translate``, ``wait``) answer
from fixed tables, so the demo, the tests and ``langgraph dev`` run offline;
they are built-in tools by name (:func:`reinloop.tools.builtin`), not part of
:mod:`reinloop.tools`' API. Nothing is imported here, so the tool catalog can
load :mod:`.tools` without the scenarios (which need the whole loop).
"""
