"""`memora eval …` commands: each prints a table, or one JSON object with --json."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from evals.common import scratch_memora
from evals.locomo import KS, run_locomo
from evals.update import run_update
from memora.cli import console, eval_app

DataOption = Annotated[Path, typer.Option("--data", exists=True, help="Benchmark data file.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
DirOption = Annotated[
    Path | None, typer.Option("--data-dir", help="Keep the built store here (default: temp).")
]


@contextmanager
def _progress(label: str, quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
    if quiet:
        yield None
        return
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


def _print_json(results: dict[str, Any]) -> None:
    print(json.dumps(results))


@eval_app.command("locomo")
def eval_locomo(data: DataOption, as_json: JsonOption = False, data_dir: DirOption = None) -> None:
    """LoCoMo retrieval: recall@k by category, search latency, ingest rate."""
    with scratch_memora(data_dir) as memora, _progress("questions", as_json) as progress:
        result = run_locomo(memora, data, progress)
    if as_json:
        _print_json({"memora": result})
        return
    table = Table("category", *[f"R@{k}" for k in KS], title=f"LoCoMo retrieval, {data.name}")
    rows = {**result["by_category"], "overall": result["overall"]}
    for name, recalls in rows.items():
        table.add_row(name, *[f"{recalls[f'recall@{k}']:.3f}" for k in KS])
    console.print(table)
    console.print(
        f"{result['questions']} questions, {result['memories']} memories; "
        f"search p50 {result['search_ms']['p50']:.1f} ms, p95 {result['search_ms']['p95']:.1f} ms;"
        f" ingest {result['ingest_per_s']:.0f} memories/s"
    )


@eval_app.command("update")
def eval_update(data: DataOption, as_json: JsonOption = False, data_dir: DirOption = None) -> None:
    """Letta fact updates: update_win, answer@1, stale@5, collateral."""
    with scratch_memora(data_dir) as memora, _progress("rows", as_json) as progress:
        result = run_update(memora, data, progress)
    if as_json:
        _print_json({"memora": result})
        return
    table = Table(
        "system",
        "update_win",
        "answer@1",
        "stale@5",
        "collateral/row",
        title=f"Fact updates, {data.name} ({result['rows']} rows)",
    )
    table.add_row(
        "memora",
        *[
            f"{result[key]:.3f}"
            for key in ("update_win", "answer@1", "stale@5", "collateral_per_row")
        ],
    )
    console.print(table)


@eval_app.command("perf")
def eval_perf(
    as_json: JsonOption = False,
    data_dir: DirOption = None,
    users: Annotated[int, typer.Option(help="Users in the store.")] = 5,
    per_user: Annotated[int, typer.Option(help="Memories per user.")] = 10_000,
) -> None:
    """Search and write-path latency with USERS x PER_USER synthetic memories, and ingest rate."""
    from evals.perf import run_perf

    with scratch_memora(data_dir) as memora, _progress("users ingested", as_json) as progress:
        result = run_perf(memora, users=users, per_user=per_user, progress=progress)
    if as_json:
        _print_json({"memora": result})
        return
    table = Table(
        "figure",
        "value",
        title=(
            f"Memory core, {result['user_size']:,} memories of one user among "
            f"{result['store_size']:,}"
        ),
    )
    table.add_row("bulk ingest", f"{result['ingest_per_s']:.0f} memories/s")
    table.add_row(
        "search p50 / p95",
        f"{result['search_ms']['p50']:.1f} / {result['search_ms']['p95']:.1f} ms",
    )
    table.add_row(
        "full write path p50 / p95",
        f"{result['write_ms']['p50']:.1f} / {result['write_ms']['p95']:.1f} ms",
    )
    console.print(table)


@eval_app.command("overhead")
def eval_overhead(
    as_json: JsonOption = False,
    turns: Annotated[int, typer.Option(help="Chat turns to time.")] = 100,
    store_size: Annotated[int, typer.Option(help="Memories of the user.")] = 10_000,
) -> None:
    """The graph's own time per turn (offline model, SQLite checkpoints), model time excluded."""
    from evals.overhead import run_overhead

    with _progress("turns", as_json) as progress:
        result = run_overhead(turns, store_size, progress)
    if as_json:
        _print_json({"memora": result})
        return
    table = Table(
        "figure", "p50 ms", "p95 ms", title=f"Per turn, {turns} turns, {store_size:,} memories"
    )
    table.add_row(
        "whole turn", f"{result['turn_ms']['p50']:.1f}", f"{result['turn_ms']['p95']:.1f}"
    )
    table.add_row(
        "graph only (model time excluded)",
        f"{result['graph_ms']['p50']:.1f}",
        f"{result['graph_ms']['p95']:.1f}",
    )
    console.print(table)
