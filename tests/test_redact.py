"""No credential of an endpoint is stored or printed: not in any table, file byte, output or error line."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from reinloop.errors import ConfigurationError, RunError
from reinloop.observe.redact import REDACTED, is_redacted, origin, redact_url, scrub
from reinloop.runs.api import resume_endpoint, run
from reinloop.testing import ScriptedChatModel

from .openai_server import Raw, completion

PASSWORD = "pw-Hunter2-a8f3"
SECRETS = (PASSWORD, "qk-Query-77d1", "tok-Access-5e2c", "sk-env-Key-0b9a")


def with_credentials(base_url: str) -> str:
    """``base_url`` with a user and password, and two secret query parameters."""
    return (base_url.replace("http://", f"http://operator:{PASSWORD}@")
            + f"?api_key={SECRETS[1]}&access_token={SECRETS[2]}&api-version=2024-06-01")


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``reinloop ARGV`` in a new process, with this worktree's package and the test's run database."""
    return subprocess.run([sys.executable, "-m", "reinloop", *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def leaks(db: Path, secrets: tuple[str, ...] = SECRETS) -> list[str]:
    """Every place a secret is found: the raw bytes of the file and its -wal/-shm, then every column of every table."""
    found = []
    raw = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))
    found += [f"bytes of {db.name}*: {s}" for s in secrets if s.encode() in raw]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        assert {"runs", "node_events", "checkpoint_writes"} <= set(tables)
        for table in tables:
            cursor = conn.execute(f'SELECT * FROM "{table}"')
            columns = [d[0] for d in cursor.description]
            for row in cursor:
                for column, value in zip(columns, row):
                    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
                    found += [f"{table}.{column}: {s}" for s in secrets if s in text]
    finally:
        conn.close()
    return found


# --- the redactor ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "expected"), [
    ("http://user:pass@host:8000/v1", "http://***@host:8000/v1"),
    ("https://tok3n@host/v1", "https://***@host/v1"),
    ("http://host/v1?api_key=a&key=b&token=c&access_token=d&apikey=e&x-api-key=f&secret=g&password=h&signature=i"
     "&sig=j&X-Amz-Credential=k&client_secret=l&api-version=2024",
     "http://host/v1?api_key=***&key=***&token=***&access_token=***&apikey=***&x-api-key=***&secret=***"
     "&password=***&signature=***&sig=***&X-Amz-Credential=***&client_secret=***&api-version=2024"),
    ("http://host/v1#access_token=abc", "http://host/v1#access_token=***"),
    ("http://host:11434/v1", "http://host:11434/v1"),
    ("http://host/v1?api-version=2024-06-01&model=x", "http://host/v1?api-version=2024-06-01&model=x"),
    ("http://u:p@[broken/v1", "http://***"),
])
def test_an_endpoint_loses_its_userinfo_and_secret_parameters_and_keeps_the_rest(url, expected):
    assert redact_url(url) == expected
    assert is_redacted(redact_url(url)) == (url != expected)


def test_a_postgresql_url_keeps_its_user_name_and_loses_the_password_wherever_it_is():
    assert redact_url("postgresql://postgres:pw@db:5432/runs?password=x&sslmode=require", keep_user=True) == (
        "postgresql://postgres@db:5432/runs?password=***&sslmode=require")


@given(secret=st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF, blacklist_characters="@/?#[]%"),
                      min_size=4, max_size=30),
       name=st.sampled_from(["api_key", "apiKey", "X-API-KEY", "token", "access_token", "secret", "password",
                             "signature", "sig", "subscription-key"]))
def test_no_secret_survives_redaction_in_any_position(secret, name):
    from urllib.parse import quote

    url = f"https://{quote(secret, safe='')}:{quote(secret, safe='')}@example.org/v1?{name}={quote(secret, safe='')}"
    redacted = redact_url(url)
    assert secret not in redacted and quote(secret, safe="") not in redacted
    assert scrub(f"failed: {url} ({secret})", url).count(REDACTED) >= 3


def test_resume_takes_credentials_from_the_flag_or_the_environment_never_from_the_database(monkeypatch):
    real = "http://me:letmein42@host/v1"
    stored = redact_url(real)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError, match=r"used the endpoint http://\*\*\*@host/v1, whose credentials .* "
                                                 r"--base-url .* OPENAI_BASE_URL"):
        resume_endpoint("t1", None, stored)
    assert resume_endpoint("t1", real, stored) == real
    monkeypatch.setenv("OPENAI_BASE_URL", "http://me:other@elsewhere/v1")  # another endpoint is not used
    with pytest.raises(ConfigurationError):
        resume_endpoint("t1", None, stored)
    monkeypatch.setenv("OPENAI_BASE_URL", real)
    assert resume_endpoint("t1", None, stored) == real
    assert resume_endpoint("t1", None, "http://host/v1") == "http://host/v1"


class QuotingModel(ScriptedChatModel):
    """A chat model whose client quotes its endpoint, credentials and all, in its errors."""

    openai_api_base: str = ""

    def _generate(self, messages: list[BaseMessage], *args: object, **kwargs: object) -> ChatResult:
        raise RuntimeError(f"cannot reach {self.openai_api_base}: refused")


def test_a_client_error_that_quotes_the_endpoint_is_stored_and_raised_without_its_credentials(run_db):
    url = with_credentials("http://127.0.0.1:9/v1")
    with pytest.raises(RunError) as raised:
        run("hi", model=QuotingModel(replies=[], openai_api_base=url), tools="calculator", thread_id="q1")
    assert "cannot reach http://***@127.0.0.1:9/v1?api_key=***" in str(raised.value)
    assert not [s for s in SECRETS if s in str(raised.value)]
    assert leaks(run_db) == []


# --- through the CLI ---------------------------------------------------------------------------------


def test_credentials_in_base_url_are_never_stored_or_printed(openai_server, run_db):
    url = with_credentials(openai_server.base_url)
    env = {"OPENAI_API_KEY": SECRETS[3]}
    calc = completion(tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}}])
    echo = json.dumps({"error": {"message": f"no access for {url}"}})  # a server that quotes the URL back
    openai_server.responses += [calc, completion("42"), calc, Raw(429, echo, {"Retry-After": "0"}), Raw(401, echo)]
    outputs = [
        cli("run", "multiply", "--base-url", url, "--thread", "ok1", "--tools", "calculator", env=env),
        cli("run", "multiply", "--base-url", url, "--thread", "bad1", "--tools", "calculator", "--json",
            "--model-retries", "1", env=env),
    ]
    assert [p.returncode for p in outputs] == [0, 1]
    retried, failed = outputs[1].stderr.strip().splitlines()  # the retry's warning, then the error
    assert f"model endpoint {redact_url(url)} answered HTTP 429" in retried
    assert failed.startswith("reinloop: error: run bad1 stopped: ")
    assert f"model endpoint {redact_url(url)} answered HTTP 401" in failed
    assert leaks(run_db, SECRETS) == []

    again = cli("resume", "bad1", env=env)  # the credentials are not in the database: they must be given again
    assert again.returncode == 1
    assert again.stderr.strip().splitlines() == [
        f"reinloop: error: run 'bad1' used the endpoint {redact_url(url)}, whose credentials reinloop never "
        "stores; pass the endpoint again with --base-url (base_url= in Python), or set OPENAI_BASE_URL to it"]
    openai_server.responses.append(completion("42"))
    resumed = cli("resume", "bad1", "--base-url", url, "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["answer"] == "42"

    outputs += [again, resumed, cli("runs", "list"), cli("runs", "list", "--json"), cli("runs", "show", "bad1"),
                cli("runs", "show", "bad1", "--format", "json"), cli("runs", "show", "bad1", "--format", "html")]
    assert all(p.returncode in (0, 1) for p in outputs)
    records = json.loads(outputs[-4].stdout)
    assert {r["base_url"] for r in records} == {redact_url(url)}
    printed = "".join(p.stdout + p.stderr for p in outputs)
    assert [s for s in SECRETS if s in printed] == []
    assert leaks(run_db, SECRETS) == []


@pytest.mark.parametrize(("url", "expected"), [
    ("http://alice:s3cret@127.0.0.1:8080/v1?api_key=k", "http://127.0.0.1:8080"),
    ("https://token@api.example.com/v1/", "https://api.example.com"),
    ("http://[::1]:9000/v1", "http://[::1]:9000"),
    ("https://api.example.com/bot123456:ABC/v1", "https://api.example.com"),  # a secret in the path goes too
    ("not a url", None),
    (None, None),
    ("http://[broken/v1", None),
])
def test_origin_keeps_only_scheme_host_and_port(url, expected):
    assert origin(url) == expected
