"""`memora eval selection`: the policy gate's precision and recall on labelled candidates."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from cli.console import console, errors
from cli.evals import (
    DataOption,
    JsonOption,
    JudgementOption,
    WriteJudgeOption,
    eval_app,
    print_json,
    progress_bar,
)


def judge_rows(table: Table, result: dict[str, Any]) -> None:
    """The write judge's rows: which judge, and for a chat model what it did."""
    table.add_row("write judge", result["write_judge"])
    if "write_judge_model" in result:
        table.add_row("asked the model", str(result["model_asked"]))
        style = "green" if result["model_fallbacks"] == 0 else "bold yellow"
        table.add_row("no usable verdict (gate alone)", f"[{style}]{result['model_fallbacks']}[/]")


def judge_line(result: dict[str, Any]) -> None:
    """Which chat model judged and where it is served, whole on one line (it may be scripted)."""
    if "write_judge_model" in result:
        console.print(
            f"write judge: chat_model: {result['write_judge_model']}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def warn_fallbacks(result: dict[str, Any]) -> None:
    """One line on stderr when the chat model gave no usable verdict on some candidates."""
    if result.get("model_fallbacks"):
        errors.print(
            f"the chat model gave no usable verdict on {result['model_fallbacks']} of "
            f"{result['model_asked']} candidates; the offline gate decided those alone",
            markup=False,
        )


@eval_app.command("selection")
def eval_selection(
    data: DataOption,
    as_json: JsonOption = False,
    judgement: JudgementOption = None,
    write_judge: WriteJudgeOption = None,
) -> None:
    """Policy gate selection: precision/recall of storing, confusion by reason."""
    from evals.selection import NONE_REASON, REASONS, STORED, run_selection
    from evals.write_judge import resolve_write_judge

    judge = resolve_write_judge(write_judge)
    with progress_bar("candidates", as_json) as progress:
        result = run_selection(data, progress, judgement, judge)
    warn_fallbacks(result)
    if as_json:
        print_json({"memora": result})
        return

    def ratio(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    summary = Table("figure", "value", title=f"Memory selection, {data.name}")
    summary.add_row("items", str(result["items"]))
    summary.add_row("judgement", result["judgement"])
    judge_rows(summary, result)
    summary.add_row("precision (stored)", ratio(result["precision"]))
    summary.add_row("recall (stored)", ratio(result["recall"]))
    style = "green" if result["sensitive_stored"] == 0 else "bold red"
    summary.add_row("sensitive stored", f"[{style}]{result['sensitive_stored']}[/]")
    console.print(summary)
    judge_line(result)
    short = {"sensitive_data": "sensitive", "instruction_like": "instruction"}
    short |= {"user_refused": "refused", "assistant_generated": "assistant"}
    confusion = Table(
        "true reason \\ predicted",
        "n",
        STORED,
        *[short.get(reason, reason) for reason in REASONS],
        title="Predicted outcome by true reason",
    )
    for reason, row in result["by_reason"].items():
        label = "(should store)" if reason == NONE_REASON else reason
        confusion.add_row(label, str(row["total"]), *[str(row[key]) for key in (STORED, *REASONS)])
    console.print(confusion)
