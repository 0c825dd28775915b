"""Helpers shared by the evaluation suites."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from memora.api import Memora
from memora.config import load_settings


def percentile_ms(samples_s: list[float], q: float) -> float:
    """The q-th percentile of durations given in seconds, in milliseconds."""
    return float(np.percentile(np.asarray(samples_s) * 1000.0, q)) if samples_s else 0.0


@contextmanager
def scratch_memora(data_dir: Path | None = None) -> Iterator[Memora]:
    """A Memora on a fresh data dir (a temporary one unless given)."""
    with tempfile.TemporaryDirectory(prefix="memora-eval-") as tmp:
        root = data_dir or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        memora = Memora(load_settings(data_dir=root))
        try:
            yield memora
        finally:
            memora.close()
