"""`memora eval recall`: recall on a labelled question set (memories, questions, answers)."""

from __future__ import annotations

from rich.table import Table

from cli.console import console
from cli.evals import (
    DataOption,
    DirOption,
    JsonOption,
    PeersOption,
    eval_app,
    print_json,
    run_systems,
)


@eval_app.command("recall")
def eval_recall(
    data: DataOption,
    as_json: JsonOption = False,
    data_dir: DirOption = None,
    peers: PeersOption = False,
) -> None:
    """Recall@k and hit@k of each question's answering memories (e.g. the Chinese sets)."""
    from evals.recall_set import KS, run_recall_set

    results = run_systems(run_recall_set, data, data_dir, peers, "questions", as_json)
    if as_json:
        print_json(results)
        return
    table = Table(
        "system",
        "questions",
        *[f"R@{k}" for k in KS],
        *[f"hit@{k}" for k in KS],
        "search p95 ms",
        title=f"Recall, {data.name}",
    )
    for name, result in results.items():
        if "error" in result:
            table.add_row(name, f"cannot run: {result['error']}", *[""] * (2 * len(KS) + 1))
            continue
        table.add_row(
            name,
            str(result["questions"]),
            *[f"{result['recall'][f'recall@{k}']:.3f}" for k in KS],
            *[f"{result['hit'][f'hit@{k}']:.3f}" for k in KS],
            f"{result['search_ms']['p95']:.1f}",
        )
    console.print(table)
