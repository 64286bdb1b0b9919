"""A newcomer's mistakes with the model, the endpoint and the command line, caught before any call or retry and
said in one line with the fix (issue 39, item 6). Each runs ``reinloop`` in a new process, with no API key set.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .local_net import free_port

pytestmark = pytest.mark.slow

REINLOOP = [sys.executable, "-m", "reinloop"]


def cli(*argv: str, cwd=None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "OPENAI_BASE_URL"}
    return subprocess.run([*REINLOOP, *argv], capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env,
                          timeout=300, cwd=cwd)


@pytest.mark.parametrize(("argv", "said"), [
    (["--base-url", "notaurl"], "reinloop: error: base URL 'notaurl' is not a URL the client can call (it has no "
     "http:// or https:// scheme): write http(s)://HOST[:PORT]/v1, e.g. http://127.0.0.1:11434/v1 (Ollama) or "
     "http://127.0.0.1:8000/v1 (vLLM)"),
    (["--base-url", "http:///v1"], "reinloop: error: base URL 'http:///v1' is not a URL the client can call (it names "
     "no host): write http(s)://HOST[:PORT]/v1, e.g. http://127.0.0.1:11434/v1 (Ollama) or http://127.0.0.1:8000/v1 (vLLM)"),
    (["--model", "fake-model"], "reinloop: error: model 'fake-model' names no provider, and none can be inferred from "
     "the name: write 'provider:model', e.g. 'openai:fake-model' (also for an OpenAI-compatible server with "
     "--base-url), 'ollama:fake-model' or 'anthropic:fake-model'"),
    (["--model", "openai:"], "reinloop: error: model 'openai:' names no model after its provider: write "
     "'provider:model', e.g. 'openai:gpt-4o-mini'"),
    (["--model", "openai:", "--base-url", "http://127.0.0.1:1/v1"], "reinloop: error: model 'openai:' names no model "
     "after its provider: write 'provider:model', e.g. 'openai:gpt-4o-mini'"),
], ids=["not-a-url", "no-host", "no-provider", "empty-name", "empty-name-local"])
def test_a_model_or_endpoint_mistake_is_refused_before_any_call(tmp_path, argv, said):
    proc = cli("run", "What is 6*7?", *argv, "--db", str(tmp_path / "runs.db"))
    assert (proc.returncode, proc.stdout, proc.stderr.splitlines()) == (2, "", [said])
    assert not (tmp_path / "runs.db").exists()


def test_the_missing_key_of_a_fallback_model_suggests_its_own_endpoint(tmp_path):
    proc = cli("run", "What is 6*7?", "--base-url", f"http://127.0.0.1:{free_port()}/v1",
               "--fallback-model", "openai:gpt-4o", "--db", str(tmp_path / "runs.db"))
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.splitlines() == [
        "reinloop: error: fallback model 'openai:gpt-4o' needs an API key: set OPENAI_API_KEY (or give it a local "
        "OpenAI-compatible server as MODEL@URL: --fallback-model openai:gpt-4o@http://127.0.0.1:8080/v1)"]


def test_batch_says_the_tasks_file_is_missing_before_the_api_key(tmp_path):
    proc = cli("batch", "nofile.jsonl", "--db", str(tmp_path / "runs.db"), cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.splitlines() == ["reinloop: error: cannot read the tasks file 'nofile.jsonl': No such file or "
                                        "directory"]


@pytest.mark.parametrize(("argv", "usage", "error"), [
    (["run"], "usage: reinloop run [OPTIONS] task   (reinloop run --help: every option)",
     "reinloop run: error: the following arguments are required: task"),
    (["run", "hi", "--max-steps", "x"], "usage: reinloop run [OPTIONS] task   (reinloop run --help: every option)",
     "reinloop run: error: argument --max-steps: must be a positive whole number or none, got 'x'"),
    (["runs", "show"], "usage: reinloop runs show [OPTIONS] thread   (reinloop runs show --help: every option)",
     "reinloop runs show: error: the following arguments are required: thread"),
], ids=["run-no-task", "run-bad-flag", "runs-show-no-thread"])
def test_a_usage_error_is_the_one_line_usage_and_the_error(argv, usage, error):
    proc = cli(*argv)
    assert (proc.returncode, proc.stdout, proc.stderr.splitlines()) == (2, "", [usage, error])
