"""Where the built-in tools work and how much they may write: :class:`ToolSettings`, plain data.

Kept apart from the tools themselves so that a :class:`~reinloop.RunSpec` (and
``reinloop --help``) can describe them without loading LangChain.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 1_000_000
"""Default cap of one ``write_file`` call, in bytes of UTF-8."""
WRITE_QUOTA_BYTES = 10_000_000
"""Default bytes ``write_file`` may write in one run."""
MAX_INSERT_VALUE_BYTES = 100_000
"""Default cap of one value ``db_insert`` writes (bytes of UTF-8 text)."""
DEFAULT_TOOLS: tuple[str, ...] = ("calculator", "db_query", "get_weather")
"""The tools ``reinloop run`` offers when ``--tools`` is not given (the seeds' demo tools)."""
BUILTIN_NAMES: tuple[str, ...] = (
    "calculator", "db_insert", "db_query", "get_weather", "read_file", "search_docs", "sql_query", "translate",
    "wait", "write_file",
)
"""The names of the built-in tools (:data:`reinloop.tools.BUILTINS` holds their factories)."""


@dataclass(frozen=True)
class ToolSettings:
    """Where the built-in tools that need a location find it, and their disk bounds (the CLI's tool flags).

    ``sandbox``, ``db``, ``docs``, ``db_tables``: ``--sandbox``, ``--db-tool``, ``--docs``, ``--db-tables``;
    ``write_quota``, ``max_file_bytes``, ``max_value_bytes``: ``--write-quota``, ``--max-file-bytes``,
    ``--max-value-bytes`` (``None`` switches a bound off).
    """

    sandbox: str | None = None
    """The directory ``read_file`` and ``write_file`` are confined to."""
    db: str | None = None
    """The SQLite file of ``sql_query`` (read-only) and ``db_insert``; never the run database."""
    docs: str | None = None
    """The folder of .txt/.md files ``search_docs`` indexes."""
    db_tables: str | None = None
    """The tables ``db_insert`` may write, comma-separated (required by ``db_insert``)."""
    write_quota: int | None = WRITE_QUOTA_BYTES
    """Bytes ``write_file`` may write in one run, resumes included."""
    max_file_bytes: int | None = MAX_FILE_BYTES
    """Bytes of one file ``write_file`` writes."""
    max_value_bytes: int | None = MAX_INSERT_VALUE_BYTES
    """Bytes of one value ``db_insert`` writes."""

    def __post_init__(self) -> None:
        from ..errors import SettingError

        for name in ("sandbox", "db", "docs", "db_tables"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise SettingError("ToolSettings", name, "must be a path", value=value, none="or")
        for name in ("write_quota", "max_file_bytes", "max_value_bytes"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise SettingError("ToolSettings", name, "must be a positive number of bytes", value=value, none="or")

    def resolved(self) -> ToolSettings:
        """The same settings with absolute paths, so a run resumed from another directory finds them."""
        absolute = {k: str(Path(v).resolve()) if v else v for k, v in (("sandbox", self.sandbox), ("db", self.db), ("docs", self.docs))}
        return replace(self, **absolute)

    def replace(self, **changes: Any) -> ToolSettings:
        """A copy with some settings changed (unknown names are refused)."""
        from ..runs.settings import replace_known

        return replace_known(self, changes, unknown="tool setting(s)", valid="tool settings")

    def as_dict(self) -> dict[str, Any]:
        """The settings as a JSON-able dict."""
        return {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in asdict(self).items()}

    def check_run_database(self, run_db: str | os.PathLike[str] | None) -> None:
        """Refuse a tool database that is the run database ``run_db`` (:class:`~reinloop.ToolDatabaseError`)."""
        refuse_run_database(self.db, run_db)


REFUSAL = ("the model would read every thread's runs and could write reinloop's own tables; "
           "give --db-tool a database of your own, not the run database --db")


def refuse_run_database(tool_db: str | os.PathLike[str] | None, run_db: str | os.PathLike[str] | None) -> None:
    """Refuse a tool database that is the run database: the same file (device and inode), however it is spelled."""
    if tool_db is None or run_db is None or "://" in str(run_db) or str(run_db) == ":memory:":
        return
    try:
        tool_stat, run_stat = os.stat(Path(tool_db).expanduser()), os.stat(Path(run_db).expanduser())
    except OSError:  # one of them does not exist yet: not the same file
        return
    if (tool_stat.st_dev, tool_stat.st_ino) == (run_stat.st_dev, run_stat.st_ino):
        from ..errors import ToolDatabaseError  # the errors load only when a run is refused, as above

        raise ToolDatabaseError(f"--db-tool {str(tool_db)!r} is the run database --db {str(run_db)!r}: {REFUSAL}", str(tool_db))
