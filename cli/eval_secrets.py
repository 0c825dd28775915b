"""`memora eval secrets`: are secret values refused as memories and cut from transcripts?"""

from __future__ import annotations

import typer
from rich.table import Table

from cli.console import console, errors
from cli.eval_selection import judge_line, judge_rows, warn_fallbacks
from cli.evals import (
    DataOption,
    JsonOption,
    JudgementOption,
    WriteJudgeOption,
    eval_app,
    print_json,
    progress_bar,
)


@eval_app.command("secrets")
def eval_secrets(
    data: DataOption,
    as_json: JsonOption = False,
    judgement: JudgementOption = None,
    write_judge: WriteJudgeOption = None,
) -> None:
    """Secrets: how many are stored or left unredacted, and what the clear texts cost."""
    from evals.secrets import run_secrets
    from evals.write_judge import resolve_write_judge

    judge = resolve_write_judge(write_judge)
    try:
        with progress_bar("texts", as_json) as progress:
            result = run_secrets(data, progress, judgement, judge)
    except (ValueError, OSError) as error:
        errors.print(f"memora eval secrets: {data}: {error}", markup=False)
        raise typer.Exit(1) from None
    warn_fallbacks(result)
    if as_json:
        print_json({"memora": result})
        return
    table = Table("figure", "value", title=f"Secrets, {data.name} ({result['judgement']})")
    judge_rows(table, result)
    for key in (
        "secret_texts",
        "secrets_stored",
        "secrets_refused_for_another_reason",
        "secrets_left_unredacted",
        "clear_texts",
        "clear_refused",
        "clear_changed_by_redaction",
    ):
        table.add_row(key.replace("_", " "), str(result[key]))
    console.print(table)
    judge_line(result)
