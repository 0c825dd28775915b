"""A `langgraph dev` process for the e2e tests: started on a free port, stopped with its group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
STARTUP_TIMEOUT_S = 90.0


@dataclass
class Server:
    url: str
    data_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    def log_tail(self, chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError as error:
            return f"<cannot read {self.log_path}: {error}>"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_env(data_dir: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("MEMORA_") and key not in {"OPENAI_API_KEY", "OPENAI_BASE_URL"}
    }
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="true",
        MEMORA_DATA_DIR=str(data_dir),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    for sig, grace in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def langgraph_dev(
    base: Path, extra_env: dict[str, str] | None = None, config: str | None = None
) -> Iterator[Server]:
    """A running `langgraph dev` serving this repository, its data dir under ``base``
    (``config``: another langgraph.json in the repository)."""
    langgraph = next(
        (p for p in (VENV_BIN / "langgraph", REPO_ROOT / ".venv/bin/langgraph") if p.exists()),
        VENV_BIN / "langgraph",
    )
    if not langgraph.exists():
        pytest.fail(f"{langgraph} not found: install the dev extra (langgraph-cli[inmem])")
    data_dir = base / "data"
    log_path = base / "server.log"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        str(langgraph),
        "dev",
        "--no-browser",
        "--no-reload",
        "--port",
        str(port),
        "--host",
        "127.0.0.1",
        *(["--config", config] if config else []),
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env=_server_env(data_dir, extra_env or {}),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    running = Server(url=url, data_dir=data_dir, log_path=log_path, process=process)
    try:
        wait_until_ready(running)
        yield running
    finally:
        _stop(process)


def wait_until_ready(server: Server) -> None:
    started = time.monotonic()
    last_error = "no attempt"
    while time.monotonic() - started < STARTUP_TIMEOUT_S:
        if server.process.poll() is not None:
            pytest.fail(
                f"langgraph dev exited with code {server.process.returncode} before answering "
                f"/ok\n--- {server.log_path} ---\n{server.log_tail(20000)}"
            )
        try:
            response = httpx.get(f"{server.url}/ok", timeout=2.0)
            if response.status_code == 200:
                return
            last_error = f"HTTP {response.status_code}: {response.text[:200]}"
        except httpx.HTTPError as error:
            last_error = f"{type(error).__name__}: {error}"
        time.sleep(0.25)
    pytest.fail(
        f"langgraph dev did not answer GET /ok within {STARTUP_TIMEOUT_S:.0f}s "
        f"(last: {last_error})\n--- {server.log_path} ---\n{server.log_tail(20000)}"
    )
