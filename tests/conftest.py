"""Shared fixtures: a Memora on a temporary data dir with a controllable clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memora.api import Memora
from memora.config import load_settings


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 11, 15, 9, 0, tzinfo=UTC))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def memora(data_dir: Path, clock: Clock) -> Iterator[Memora]:
    instance = Memora(load_settings(data_dir=data_dir), clock=clock)
    yield instance
    instance.close()
