"""``langgraph dev`` serves the demo graph offline, and the ``langgraph_sdk`` client runs, interrupts and resumes it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from langgraph_sdk import get_client

from .local_net import free_port

ROOT = Path(__file__).parent.parent
OFFLINE = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "true"}


def wait_until_up(url: str, proc: subprocess.Popen, log: Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"langgraph dev did not answer on {url} within {seconds} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``langgraph dev`` on 127.0.0.1 (run from a temp dir: it writes .langgraph_api/ there); stopped by its PID."""
    tmp_path = tmp_path_factory.mktemp("langgraph-dev")
    port, log = free_port(), tmp_path / "server.log"
    command = [str(Path(sys.executable).parent / "langgraph"), "dev", "--host", "127.0.0.1", "--port", str(port),
               "--no-browser", "--no-reload", "--config", str(ROOT / "langgraph.json")]
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, **OFFLINE}, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, proc, log)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server's own process group: uvicorn and its workers
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


async def run_interrupt_resume_and_stream(url: str) -> dict:
    client = get_client(url=url)
    seen: dict = {}
    thread = await client.threads.create()
    seen["done"] = await client.runs.wait(thread["thread_id"], "reinloop", input={"task": "What is (22*1.8)+32?"})
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "reinloop", input={"task": "杭州天气？"}, interrupt_before=["execute"])
    seen["paused"] = await client.threads.get_state(thread["thread_id"])
    seen["resumed"] = await client.runs.wait(thread["thread_id"], "reinloop", input=None)
    thread = await client.threads.create()
    seen["events"] = [part.data async for part in client.runs.stream(
        thread["thread_id"], "reinloop", input={"task": "2+2*3"}, stream_mode="custom") if part.event == "custom"]
    return seen


def test_langgraph_dev_runs_interrupts_and_resumes_the_demo_graph(server):
    seen = asyncio.run(run_interrupt_resume_and_stream(server))
    assert seen["done"]["status"] == "done" and seen["done"]["answer"] == "71.6"
    assert seen["paused"]["next"] == ["execute"] and seen["paused"]["values"]["status"] == "running"
    assert seen["resumed"]["status"] == "done" and seen["resumed"]["answer"] == "杭州: 多云, 22℃ (demo data)"
    events = seen["events"]
    assert [e["node"] for e in events][:6] == ["decide", "parse", "validate", "execute", "memorize", "guard"]
    assert events[3]["actions"][0]["observation"] == "8" and all(e["latency_ms"] >= 0 for e in events)
    assert events[0]["checkpoint_id"]  # the server's checkpointer is in the events


async def answer_approvals(url: str) -> dict:
    """Two threads wait for approval of a get_weather call; one is approved, one rejected, through the interrupt API."""
    client = get_client(url=url)
    seen: dict = {}
    for decision in ("approve", {"action": "reject", "message": "not today"}):
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], "reinloop-approvals", input={"task": "杭州天气？"})
        state = await client.threads.get_state(thread["thread_id"])
        [waiting] = state["interrupts"]
        call_id = waiting["value"]["calls"][0]["id"]
        final = await client.runs.wait(thread["thread_id"], "reinloop-approvals",
                                       command={"resume": {"decisions": {call_id: decision}}})
        seen[decision if isinstance(decision, str) else decision["action"]] = (state, waiting["value"], final)
    return seen


def test_langgraph_dev_clients_answer_an_approval_through_the_interrupt_api(server):
    seen = asyncio.run(answer_approvals(server))
    state, waiting, final = seen["approve"]
    assert state["next"] == ["approve"] and waiting["kind"] == "reinloop.approval"
    assert [(c["tool"], c["args"]) for c in waiting["calls"]] == [("get_weather", {"city": "杭州"})]
    assert final["status"] == "done" and final["answer"] == "杭州: 多云, 22℃ (demo data)"
    _, _, rejected = seen["reject"]
    observations = [a["observation"] for step in rejected["scratchpad"] for a in step["actions"]]
    assert "not today" in observations[0] and "多云" not in rejected["answer"]


def request(url: str, method: str = "POST", body: bytes | None = b"{}", **headers: str) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


ATTACKS = [
    ("cross-origin JSON", {"Content-Type": "application/json", "Origin": "http://evil.example"}, 403),
    ("cross-origin, same host other port", {"Content-Type": "application/json", "Origin": "http://127.0.0.1:1"}, 403),
    ("null origin", {"Content-Type": "application/json", "Origin": "null"}, 403),
    ("browser cross-site", {"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403),
    ("text/plain", {"Content-Type": "text/plain"}, 415),
    ("form", {"Content-Type": "application/x-www-form-urlencoded"}, 415),
    ("multipart", {"Content-Type": "multipart/form-data; boundary=x"}, 415),
    ("no type", {}, 415),
]


def test_langgraph_dev_refuses_cross_origin_and_non_json_requests_so_no_web_page_answers_an_approval(server):
    thread = asyncio.run(get_client(url=server).threads.create())["thread_id"]
    for name, headers, status in ATTACKS:
        body = b'{"command": {"resume": {"decisions": {}}}, "assistant_id": "reinloop-approvals"}'
        got, answer = request(f"{server}/threads/{thread}/runs/wait", body=body, **headers)
        assert got == status, name
        assert "access-control-allow-origin" not in {k.lower() for k in answer}, name
    preflight = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Private-Network": "true"}
    got, answer = request(f"{server}/threads", method="OPTIONS", body=None, **preflight)
    assert got == 403 and "access-control-allow-private-network" not in {k.lower() for k in answer}
    assert request(f"{server}/threads", body=b"{}", **{"Content-Type": "application/json"})[0] == 200  # a program's JSON
