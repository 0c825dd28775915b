"""The ``memora`` command (typer + rich): the top floor, and the only place that prints."""
