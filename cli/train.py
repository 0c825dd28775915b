"""`memora train`: reproduce the trained decisions' weights from the corpora in the repository."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cli.console import console

CacheOption = Annotated[
    Path,
    typer.Option("--cache", help="Where sentence vectors of the corpora are kept between runs."),
]


CardsOption = Annotated[Path, typer.Option("--cards", help="Where the model cards are written.")]


def train(
    cache: CacheOption = Path(".cache/judgement"), cards: CardsOption = Path("docs/models")
) -> None:
    """Fit the gate, secret, secret-span and both relation decisions and write their weights.

    Prints each decision's held-out figures (one item in five, chosen by a stable hash).
    """
    from memora.judgement.cards import model_card
    from memora.judgement.encoder import bundled_encoder
    from memora.judgement.train import train_all

    encoder = bundled_encoder()
    reports = train_all(cache, encoder)
    cards.mkdir(parents=True, exist_ok=True)
    for report in reports:
        (cards / f"{report.decision}.md").write_text(model_card(report, encoder.encoder_id))
        table = Table(
            title=f"{report.decision}: {report.train_rows} train / {report.held_out_rows} "
            f"held out, accuracy {report.accuracy:.3f}"
        )
        for column in ("label", "precision", "recall", "support"):
            table.add_column(column)
        for label, scores in report.per_label.items():
            table.add_row(
                label,
                f"{scores['precision']:.3f}",
                f"{scores['recall']:.3f}",
                str(int(scores["support"])),
            )
        console.print(table)
        for name, value in report.extra.items():
            console.print(f"  {name}: {value:.3f}")
