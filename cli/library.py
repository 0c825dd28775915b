"""The memory library as the command line opens it: one per process, closed before exit."""

from __future__ import annotations

from memora.api import Memora
from memora.config import get_settings

_opened: list[Memora] = []
"""Every Memora this process opened, closed by ``main`` so queued vector writes finish."""


def open_memora(*, allow_model_change: bool = False) -> Memora:
    """The process's Memora for the configured data dir (opened on first use)."""
    if _opened and not allow_model_change:
        return _opened[0]
    memora = Memora(get_settings(), allow_model_change=allow_model_change)
    _opened.append(memora)
    return memora


def close_opened() -> None:
    """Close every opened Memora while the interpreter still runs (atexit is too late)."""
    while _opened:
        _opened.pop().close()
