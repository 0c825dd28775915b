"""`memora eval memory`: resident memory after many users and many searches for unknown ids.

Its own module because cli/evals.py is near the size limit; cli/app.py registers it.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from cli.console import console
from evals.common import scratch_memora


def eval_memory(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    users: Annotated[int, typer.Option(min=1, help="Users ingested.")] = 2_000,
    per_user: Annotated[int, typer.Option(min=1, help="Memories per user.")] = 50,
    unknown: Annotated[
        int, typer.Option(min=0, help="Searches for user ids that hold nothing.")
    ] = 20_000,
) -> None:
    """Print this process's resident memory (RSS) after ingesting USERS x PER_USER memories,
    after searching each user once, and after UNKNOWN searches for unknown user ids; the
    ranking cache holds at most MEMORA_RANKING_CACHE_USERS users."""
    import json

    from cli.evals import progress_bar
    from evals.memory import run_memory

    with scratch_memora() as memora, progress_bar("users ingested", as_json) as progress:
        result = run_memory(
            memora, users=users, per_user=per_user, unknown=unknown, progress=progress
        )
    if as_json:
        print(json.dumps({"memora": result}, indent=2))
        return
    table = Table(
        "after",
        "RSS (MiB)",
        "cached users",
        title=(
            f"Memory: {users:,} users x {per_user} memories, {unknown:,} unknown-id searches "
            f"(cache bound {result['cache_bound']:,})"
        ),
    )
    for phase in result["phases"]:
        table.add_row(phase["phase"], f"{phase['rss_mib']:.0f}", f"{phase['cached_users']:,}")
    console.print(table)
