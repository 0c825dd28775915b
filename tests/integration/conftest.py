"""Library integration tests run on both backends: the ``memora`` fixture here takes ``backend``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memora.api import Memora
from tests.conftest import Backend, Clock


@pytest.fixture
def memora(data_dir: Path, clock: Clock, backend: Backend) -> Iterator[Memora]:
    instance = Memora(backend.settings(data_dir), clock=clock)
    yield instance
    instance.close()
