"""Fixtures for the contract test of `origin mcp` against the official MCP Python SDK.

A store is filled per test module with `origin ingest` from a copy of the Rust tests' agent
home (tests/fixtures/agent-home), to which a few Claude Code sessions dated relative to now
are added (the fixtures' own sessions are all older than a week, so the timeline's 7d default
and its limit of 50 need sessions near now). Tests that write get a store of their own.
Each test starts its own `origin mcp` over stdio with the SDK's stdio client, as the agent
"python-sdk" on the device "laptop", in the time zone Asia/Shanghai.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import AsyncIterator

import pytest

import mcp
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "agent-home"
CLIENT_NAME = "python-sdk"
DEVICE = "laptop"
RECORDED_HOME = "/home/dev"

# The server's environment (as tests/it/mcp_stdio.rs). The SDK's stdio client passes only
# HOME, LOGNAME, PATH, SHELL, TERM and USER from ours, so CLAUDE_CONFIG_DIR, CODEX_HOME and
# the like of the machine running the tests never reach the server.
SERVER_ENV = {"TZ": "Asia/Shanghai", "ORIGIN_WATCH_INTERVAL_MS": "0", "ORIGIN_DEVICE": DEVICE}

# Synthetic sessions (project `contract-probe`), all under one Claude Code project folder.
PROBE_PROJECT = "contract-probe"
PROBE_BIG_MESSAGES = 60  # one session longer than the timeline's default limit of 50
PROBE_SMALL_SESSIONS = 54  # with the big and the six-day one: more than 50 sessions in 7 days
PROBE_BIG_TITLE = "Contract probe: the long session"


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def origin_bin() -> Path:
    env = os.environ.get("ORIGIN_BIN")
    path = Path(env) if env else (HERE / ".." / ".." / "target" / "debug" / "origin").resolve()
    if not (path.is_file() and os.access(path, os.X_OK)):
        how = "ORIGIN_BIN" if env else "the default ../../target/debug/origin (relative to tests/python)"
        pytest.fail(
            f"The origin binary was not found at {path} ({how}). Build it with `cargo build -p origin` "
            "in the workspace, or point ORIGIN_BIN at an origin binary.",
            pytrace=False,
        )
    return path


def _iso_z(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _claude_line(session: str, role: str, text: str, when: datetime, n: int) -> str:
    u = str(uuid.uuid5(uuid.NAMESPACE_URL, f"origin-contract/{session}/{n}"))
    content: object = text if role == "user" else [{"type": "text", "text": text}]
    return json.dumps(
        {
            "parentUuid": None,
            "isSidechain": False,
            "type": role,
            "sessionId": session,
            "uuid": u,
            "timestamp": _iso_z(when),
            "cwd": f"{RECORDED_HOME}/{PROBE_PROJECT}",
            "version": "2.1.281",
            "gitBranch": "main",
            "message": {"role": role, "content": content},
        },
        ensure_ascii=False,
    )


def _session_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"origin-contract/session/{name}"))


@dataclass
class Probe:
    """The synthetic sessions added to the copy of the fixtures."""

    big: str
    six_days: str
    nine_days: str
    small: list[str]
    made_at: datetime


def _add_probe_sessions(agent_home: Path) -> Probe:
    folder = agent_home / ".claude" / "projects" / f"-home-dev-{PROBE_PROJECT}"
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(timezone.utc).replace(microsecond=0)

    def write(name: str, lines: list[str]) -> str:
        sid = _session_id(name)
        (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return sid

    big_sid = _session_id("big")
    start = now - timedelta(days=2)
    lines = [json.dumps({"type": "custom-title", "customTitle": PROBE_BIG_TITLE, "sessionId": big_sid})]
    for i in range(PROBE_BIG_MESSAGES):
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(_claude_line(big_sid, role, f"contractprobe quokka message {i:02d}", start + timedelta(seconds=i), i))
    write("big", lines)

    small = []
    for k in range(PROBE_SMALL_SESSIONS):
        sid = _session_id(f"small-{k}")
        when = now - timedelta(days=1) + timedelta(minutes=k)
        small.append(write(f"small-{k}", [_claude_line(sid, "user", f"contractprobe wombat session {k:02d}", when, 0)]))

    six = _session_id("six-days")
    write("six-days", [_claude_line(six, "user", "contractprobe sixdays: a session six days ago", now - timedelta(days=6), 0)])
    nine = _session_id("nine-days")
    write("nine-days", [_claude_line(nine, "user", "contractprobe ninedays: a session nine days ago", now - timedelta(days=9), 0)])
    return Probe(big=big_sid, six_days=six, nine_days=nine, small=small, made_at=now)


@dataclass
class Store:
    """A filled store and how to start `origin mcp` on it."""

    home: Path
    agent_home: Path
    bin: Path
    probe: Probe

    def params(self) -> StdioServerParameters:
        return StdioServerParameters(
            command=str(self.bin),
            args=["--home", str(self.home), "mcp", "--agents-home", str(self.agent_home), "--recorded-home", RECORDED_HOME],
            env=dict(SERVER_ENV),
        )

    @asynccontextmanager
    async def connect(self, client_name: str = CLIENT_NAME) -> AsyncIterator[ClientSession]:
        """`origin mcp` on this store, initialized, as the MCP client `client_name`."""
        info = types.Implementation(name=client_name, version=getattr(mcp, "__version__", "2"))
        with open(self.home.parent / f"{self.home.name}.server-stderr.log", "a", encoding="utf-8") as errlog:
            try:
                async with stdio_client(self.params(), errlog=errlog) as (read, write):
                    async with ClientSession(read, write, read_timeout_seconds=30, client_info=info) as session:
                        await session.initialize()
                        yield session
            except BaseExceptionGroup as group:
                # The SDK's task groups wrap what the test raised (an assertion, pytest.fail):
                # show the test's own exception.
                raise _single(group) from None


def _single(group: BaseExceptionGroup) -> BaseException:
    e: BaseException = group
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    return e


def _ingest(bin_path: Path, home: Path, agent_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "USER")}
    env.update(SERVER_ENV)
    out = subprocess.run(
        [str(bin_path), "--home", str(home), "ingest", "--agents-home", str(agent_home), "--recorded-home", RECORDED_HOME],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, f"origin ingest failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"


@pytest.fixture(scope="module")
def agent_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Probe]:
    if not FIXTURES.is_dir():
        pytest.fail(f"The agent-home fixtures are missing at {FIXTURES}", pytrace=False)
    dst = tmp_path_factory.mktemp("agents") / "agent-home"
    shutil.copytree(FIXTURES, dst, symlinks=True)
    return dst, _add_probe_sessions(dst)


@pytest.fixture(scope="module")
def store(origin_bin: Path, agent_home: tuple[Path, Probe], tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The module's store, for tests that only read."""
    home = tmp_path_factory.mktemp("store") / "origin"
    _ingest(origin_bin, home, agent_home[0])
    return Store(home=home, agent_home=agent_home[0], bin=origin_bin, probe=agent_home[1])


@pytest.fixture
def fresh_store(origin_bin: Path, agent_home: tuple[Path, Probe], tmp_path: Path) -> Store:
    """A store of the test's own, for tests that remember, correct or forget."""
    home = tmp_path / "origin"
    _ingest(origin_bin, home, agent_home[0])
    return Store(home=home, agent_home=agent_home[0], bin=origin_bin, probe=agent_home[1])


@pytest.fixture
def isolated_store(origin_bin: Path, tmp_path: Path) -> Store:
    """A store and an agent home (the fixtures alone) of the test's own, for tests that write logs."""
    agents = tmp_path / "agent-home"
    shutil.copytree(FIXTURES, agents, symlinks=True)
    home = tmp_path / "origin"
    _ingest(origin_bin, home, agents)
    probe = Probe(big="", six_days="", nine_days="", small=[], made_at=datetime.now(timezone.utc))
    return Store(home=home, agent_home=agents, bin=origin_bin, probe=probe)
