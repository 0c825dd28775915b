"""Every exception class the project defines belongs to the one ``MemoraError`` family."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from cli.app import exit_code_for
from graph.errors import http_status_for
from memora.errors import (
    InvalidInput,
    InvalidToken,
    MemoraError,
    MemoryRefused,
    NotFound,
    StoreError,
    ThreadOwnershipError,
)

PACKAGES = ("agent", "cli", "evals", "graph", "memora", "nodes")


def _project_exception_classes() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        names = [package_name]
        names += [
            info.name
            for info in pkgutil.walk_packages(package.__path__, prefix=f"{package_name}.")
            if not info.name.endswith(".__main__")  # running it would start the command line
        ]
        for name in names:
            module = importlib.import_module(name)
            found += [
                member
                for _, member in inspect.getmembers(module, inspect.isclass)
                if issubclass(member, BaseException) and member.__module__ == name
            ]
    return found


def test_every_project_exception_derives_from_memora_error() -> None:
    classes = _project_exception_classes()
    assert len(classes) >= 10, classes
    strays = [f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, MemoraError)]
    assert strays == []


@pytest.mark.parametrize(
    ("error", "exit_code", "status"),
    [
        (NotFound("no memory x"), 1, 404),
        (InvalidInput("too long"), 2, 422),
        (MemoryRefused("sensitive_data"), 2, 422),
        (StoreError("locked"), 2, 500),
        (InvalidToken("expired"), 2, 401),
        (ThreadOwnershipError("not yours"), 2, 403),
        (MemoraError("anything else"), 1, 500),
    ],
)
def test_each_boundary_maps_the_family_in_one_table(
    error: MemoraError, exit_code: int, status: int
) -> None:
    assert exit_code_for(error) == exit_code
    assert http_status_for(error) == status
