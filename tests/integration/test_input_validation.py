"""Bad input is refused up front: fast, with one line, and leaving nothing behind.

Through the Python API the refusal is ``InvalidInput``; through the console script
it is one line on stderr and exit code 2. Either way nothing is stored or audited.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from langgraph.runtime import Runtime

from memora.api import Memora
from memora.limits import MAX_USER_ID_CHARS
from memora.validation import InvalidInput
from nodes.common import resolve_user_id
from nodes.state import Context
from tests.integration.test_cli import api, listed, one_error_line, run_parallel

MEGABYTE = "I keep bees on the roof of my building in Kaohsiung. " * 20_000


def _nothing_kept(memora: Memora, user_id: str = "default") -> None:
    assert memora.list(user_id) == []
    assert memora.audit.entries(user_id, limit=-1) == []
    assert memora.get_profile(user_id) == {}


def test_a_megabyte_memory_or_query_is_refused_in_milliseconds_without_an_audit_entry(
    memora: Memora,
) -> None:
    assert len(MEGABYTE) > 1_000_000
    started = time.perf_counter()
    with pytest.raises(InvalidInput, match="memory is longer than 500 characters"):
        memora.add("default", MEGABYTE)
    with pytest.raises(InvalidInput, match="query is longer than 500 characters"):
        memora.search("default", MEGABYTE)
    assert time.perf_counter() - started < 0.5
    _nothing_kept(memora)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda m: m.add("default", "I live in Taipei \udce9"), id="add"),
        pytest.param(lambda m: m.search("default", "where do I live \ud800"), id="search"),
        pytest.param(lambda m: m.set_profile("default", "city\udc80", "Taipei"), id="profile-key"),
        pytest.param(lambda m: m.set_profile("default", "city", "Tai\udc80pei"), id="profile"),
    ],
)
def test_lone_surrogates_through_the_api_are_refused(memora: Memora, call: object) -> None:
    with pytest.raises(InvalidInput, match="not valid UTF-8"):
        call(memora)  # type: ignore[operator]
    _nothing_kept(memora)


@pytest.mark.parametrize(
    "user_id",
    ["", "   ", "x" * (MAX_USER_ID_CHARS + 1), "x" * 100_000, "alice\nbob", "bell\x07"],
)
def test_user_ids_must_be_1_to_256_printable_characters(memora: Memora, user_id: str) -> None:
    with pytest.raises(InvalidInput, match="^user id "):
        memora.add(user_id, "I keep bees in Kaohsiung")
    with pytest.raises(InvalidInput, match="^user id "):
        memora.search(user_id, "bees")
    assert memora.store.users() == []


def test_the_longest_valid_user_id_is_accepted(memora: Memora) -> None:
    longest = "u" * MAX_USER_ID_CHARS
    assert memora.add(longest, "I keep bees in Kaohsiung").accepted
    assert [unit.content for unit in memora.list(longest)] == ["I keep bees in Kaohsiung"]


def test_the_graph_refuses_a_malformed_user_id_with_a_clear_error() -> None:
    runtime = Runtime(context=Context(user_id="x" * 100_000))
    with pytest.raises(InvalidInput, match="^user id is longer than 256 characters$"):
        resolve_user_id(runtime, {"configurable": {}})
    configured = {"configurable": {"user_id": "tab\tin-id"}}
    with pytest.raises(InvalidInput, match="printable"):
        resolve_user_id(Runtime(context=Context()), configured)
    assert resolve_user_id(Runtime(context=Context()), {"configurable": {}}) == "default"


def test_the_cli_refuses_bad_input_with_one_line_and_exit_2(data_dir: Path) -> None:
    # A str with surrogates is passed to the child as the raw, undecodable bytes.
    procs = run_parallel(
        (data_dir, "memories", "add", "I live in caf\udce9 street"),
        (data_dir, "memories", "search", "caf\udce9"),
        (data_dir, "memories", "list", "--user", "\udcff"),
        (data_dir, "memories", "add", "I keep bees. " * 100),
        (data_dir, "memories", "add", "I keep bees in Kaohsiung", "--user", ""),
        (data_dir, "profile", "set", "city", "x" * 600),
        (data_dir, "chat", "--thread", "bad\tthread"),
        (data_dir, "users", "erase", "x" * 300, "--yes"),
    )
    expected = [
        "argument 3 is not valid UTF-8",
        "argument 3 is not valid UTF-8",
        "argument 4 is not valid UTF-8",
        "memory is longer than 500 characters",
        "user id must not be empty",
        "profile value is longer than 500 characters",
        "thread id must be printable characters only",
        "user id is longer than 256 characters",
    ]
    for proc, message in zip(procs, expected, strict=True):
        assert proc.returncode == 2, (proc.args, proc.stdout, proc.stderr)
        assert one_error_line(proc) == f"memora: {message}"
    assert listed(data_dir) == {}
    memora = api(data_dir)
    _nothing_kept(memora)
    memora.close()
