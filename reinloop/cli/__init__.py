"""The ``reinloop`` command: one module per group of subcommands over the public functions."""


# ---- ``reinloop.cli`` was a module and is now this package: its names still resolve here, with a warning,
# for one release. Delete this block in the release after.
from .. import moved_names  # noqa: E402

_OLD_NAMES = ['Any', 'COMMANDS', 'Callable', 'Command', 'ConfigurationError', 'DB_VARIABLE', 'DEFAULT_DB', 'DEFAULT_LEASE', 'DEFAULT_MODEL', 'EXIT_DONE', 'EXIT_ERROR', 'EXIT_USAGE', 'Handler', 'Iterator', 'MODEL_VARIABLE', 'ModelSetupError', 'NOT_REPLAYED', 'NoReturn', 'Parser', 'Path', 'ReaderSafe', 'ReinloopError', 'RunSpec', 'Sequence', 'TextIO', 'ToolDatabaseError', 'UsageError', 'add_answer_flags', 'add_db_flag', 'add_output_flags', 'add_spec_flags', 'annotations', 'argparse', 'base_spec', 'batch_options', 'break_answer', 'build_parser', 'checking_input', 'cli_approve', 'cli_runs', 'cmd_batch', 'cmd_demo', 'cmd_graph', 'cmd_replay', 'cmd_resume', 'cmd_run', 'command', 'contextlib', 'counted', 'dataclass', 'dataclasses', 'demo_options', 'end_interrupted', 'exit_code_of', 'graph_options', 'in_flag_terms', 'interrupts_said', 'main', 'make_console', 'os', 'positive_seconds', 'print_error', 'print_index_progress', 'print_outcome', 'replay_options', 'resume_options', 'resume_shown', 'run_options', 'safe_json', 'safe_text', 'say', 'short', 'spec_changes', 'spec_from', 'sys', 'task_text', 'tasks_file', 'usage_error', 'whole', 'write_output']


__getattr__ = moved_names(__name__, "reinloop.cli.app", _OLD_NAMES)
