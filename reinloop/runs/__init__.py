"""Runs: what a run is made of (:class:`RunSpec`, :class:`Limits`) and what starts, keeps, replays and answers runs."""

__all__ = ["run", "resume", "list_runs", "show_run", "delete_run", "prune_runs", "Outcome", "RunDetail",
           "RunInterrupted", "PruneReport"]


# ---- ``reinloop.runs`` was a module and is now this package: its names still resolve here, with a warning,
# for one release. Delete this block in the release after.
from .. import moved_names  # noqa: E402

_OLD_NAMES = ['Any', 'BASE_URL_VARIABLE', 'BUILTINS', 'BaseChatModel', 'BaseTool', 'BreakAnswer', 'BreakRecord', 'Callable', 'Command', 'ConfigurationError', 'DB_VARIABLE', 'DEFAULT_DB', 'Database', 'EventHandler', 'GROUPS', 'Given', 'HEARTBEAT_SECONDS', 'Iterator', 'Limits', 'Mapping', 'McpTool', 'NotResumableError', 'Outcome', 'OutputProtocol', 'Path', 'Progress', 'PruneReport', 'ReinloopError', 'ReinloopGraph', 'RunDetail', 'RunError', 'RunInterrupted', 'RunRecord', 'RunSpec', 'RunStoppedError', 'StoredDataError', 'ThreadNotFoundError', 'TokenHandler', 'annotations', 'answer_claim', 'asdict', 'break_interrupts', 'builtins', 'calls_of', 'charge_journaled_writes', 'chat_model_of', 'check_task', 'close_mcp', 'config_of', 'connect_seconds', 'contextlib', 'dataclass', 'db_location', 'db_timeout', 'delete_run', 'faulty_field', 'graph_for', 'huge_number', 'is_object_label', 'is_redacted', 'list_runs', 'mcp', 'mcp_tools_in', 'new_thread_id', 'object_label', 'open_db', 'opened_here', 'os', 'owned', 'owned_runs', 'protocol_change', 'prune_runs', 'record_spec', 'redact_url', 'replaced', 'resolve_model', 'resume', 'resume_command', 'resume_endpoint', 'resume_with', 'run', 'run_limits', 'run_with', 'save_interrupted', 'show_run', 'socket', 'spec_from_settings', 'stored_spec', 'stream_run', 'stream_stored', 'thread_config', 'threading', 'tool_list', 'uuid', 'waiting_calls', 'with_objects']


PUBLIC = ("run", "resume", "list_runs", "show_run", "delete_run", "prune_runs", "Outcome", "RunDetail",
          "RunInterrupted", "PruneReport")
"""The run layer's public face, one function per command (``from reinloop.runs import run, resume``): kept here."""


__getattr__ = moved_names(__name__, "reinloop.runs.api", _OLD_NAMES, PUBLIC)
