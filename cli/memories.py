"""`memora memories …`: inspect and manage one user's long-term memories."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cli.console import UserOption, ask, console, errors, id_table, status_style
from cli.library import open_memora
from graph.checkpointed import forget_in_threads, open_agent
from memora.api import Memora
from memora.config import get_settings
from memora.errors import NotFound
from memora.models import MemorySource, MemoryStatus

memories_app = typer.Typer(help="Inspect and manage long-term memories.", no_args_is_help=True)


def _missing(memory_id: str) -> NotFound:
    return NotFound(f"no memory {memory_id} for this user")


@memories_app.command("add")
def memories_add(text: str, user: UserOption = "default") -> None:
    """Remember TEXT through the full write path (policy, reconcile, store)."""
    outcome = open_memora().add(user, text, source=MemorySource(actor="cli"))
    if not outcome.accepted:
        console.print(f"[red]rejected[/red]: {outcome.reason}")
        raise typer.Exit(1)
    action = outcome.action.value if outcome.action else "?"
    console.print(f"[green]accepted[/green] ({action}) id={outcome.memory_id}")
    if outcome.affected_ids:
        console.print(f"affected: {', '.join(outcome.affected_ids)}")


@memories_app.command("search")
def memories_search(query: str, user: UserOption = "default") -> None:
    """Search memories with the agent's ranking and retrieval policy."""
    results = open_memora().search(user, query)
    if not results:
        console.print("no memories found")
        return
    table = id_table("content", "score", "relevance", "cosine", "lexical")
    for hit in results:
        table.add_row(
            escape(hit.memory.id),
            escape(hit.memory.content),
            f"{hit.score:.3f}",
            f"{hit.relevance:.3f}",
            f"{hit.semantic_similarity:.3f}",
            f"{hit.lexical:.3f}",
        )
    console.print(table)


@memories_app.command("list")
def memories_list(
    user: UserOption = "default",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print every memory as one JSON list (streamed).")
    ] = False,
    status: Annotated[
        MemoryStatus | None, typer.Option(help="active, superseded or archived")
    ] = None,
    page: Annotated[int, typer.Option(min=1, help="Which page of the table.")] = 1,
    page_size: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per page.")] = 100,
) -> None:
    """List memories (oldest first), one page of the table at a time."""
    memora = open_memora()
    if as_json:
        # Written as it is read, a batch at a time, so 50,000 memories need no more memory.
        sys.stdout.write("[")
        for number, unit in enumerate(memora.iter_memories(user, status)):
            sys.stdout.write(("," if number else "") + unit.model_dump_json())
        sys.stdout.write("]\n")
        return
    total = memora.count(user, status)
    units = memora.list(user, status, limit=page_size, offset=(page - 1) * page_size)
    table = id_table("status", "kind", "imp", "content")
    for unit in units:
        style = status_style(unit.status.value)
        table.add_row(
            escape(unit.id),
            f"[{style}]{unit.status.value}[/]",
            escape(unit.kind),
            str(unit.importance),
            escape(unit.content),
        )
    console.print(table)
    if total > len(units):
        first = (page - 1) * page_size + 1 if units else 0
        shown = f"{first}–{first + len(units) - 1}" if units else "none"
        more = f"; --page {page + 1} for more" if first + len(units) - 1 < total else ""
        console.print(f"showing {shown} of {total:,}{more}", markup=False)


@memories_app.command("show")
def memories_show(memory_id: str, user: UserOption = "default") -> None:
    """Show every field of one memory."""
    unit = open_memora().get(user, memory_id)
    if unit is None:
        raise _missing(memory_id)
    console.print_json(unit.model_dump_json())


@memories_app.command("history")
def memories_history(memory_id: str, user: UserOption = "default") -> None:
    """Show a memory's supersession chain and its audit trail."""
    history = open_memora().history(user, memory_id)
    if not history.chain:
        raise _missing(memory_id)
    table = id_table("status", "created", "superseded_by", "content", title="versions")
    for unit in history.chain:
        table.add_row(
            escape(unit.id),
            unit.status.value,
            unit.created_at.isoformat(timespec="seconds"),
            escape(unit.superseded_by or ""),
            escape(unit.content),
        )
    console.print(table)
    trail = Table("at", "event", "decision", "action", "ids", title="audit")
    for entry in history.audit:
        trail.add_row(
            escape(entry.at),
            escape(entry.event),
            escape(entry.decision),
            escape(entry.action or ""),
            escape(", ".join(entry.memory_ids)),
        )
    console.print(trail)


SCRUB_PENDING_NOTE = (
    "not yet scrubbed: another process is reading the store, so a copy of the deleted text"
    " stays in its write-ahead log until that reader lets go; Memora clears it on its next"
    " forget or when it closes"
)


@memories_app.command("forget")
def memories_forget(
    memory_id: str,
    user: UserOption = "default",
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a memory and the older versions it replaced (asks first unless --yes)."""
    memora = open_memora()
    preview = memora.preview(user, memory_id)
    if preview is None:
        raise _missing(memory_id)
    console.print(f"Memory: {preview}", markup=False, highlight=False)
    chain = memora.chain(user, memory_id)  # what is shown is the most that goes
    for unit in chain:
        if unit.id != memory_id:
            console.print(f"Also deletes this older version: {unit.content}", markup=False)
    if not yes:
        answer = ask("Delete this memory? [y/N]: ")
        if answer not in {"y", "yes"}:
            console.print("kept")
            return
    ids = [u.id for u in chain]
    threads = _blank_threads(user, ids, [preview, *(u.content for u in chain)])
    deleted = memora.forget(user, memory_id, actor="cli", only=ids)
    _report_deleted(memora, deleted, threads)


def _blank_threads(user: str, ids: list[str], texts: list[str]) -> int:
    """Take a deletion's words out of the user's threads, before it is made: a forget cut
    short (killed, a locked store) can then simply be run again, as the memory is still there
    to name. Returns how many threads changed."""
    if not ids:
        return 0
    settings = get_settings()
    with open_agent(settings.data_dir, settings.database_url) as agent:
        return forget_in_threads(agent, user, ids, texts)


def _report_deleted(memora: Memora, deleted: list[str], threads: int) -> None:
    """Say what a deletion removed and from how many of the user's threads its words went."""
    console.print(f"deleted {len(deleted)} version(s)")
    if threads:
        console.print(f"removed the turns that mentioned it from {threads} conversation(s)")
    if memora.scrub_pending:
        console.print(SCRUB_PENDING_NOTE)


@memories_app.command("pending")
def memories_pending(user: UserOption = "default") -> None:
    """List deletion requests waiting for your approval (from the store, MCP, …)."""
    memora = open_memora()
    requests = memora.pending_forgets(user)
    if not requests:
        console.print("no deletion requests pending")
        return
    table = Table("request", "memory", "from", "requested", "preview", "reason")
    for request in requests:
        table.add_row(
            escape(request.id),
            escape(request.memory_id),
            escape(request.source),
            escape(request.requested_at[:19]),
            escape(_with_older_versions(memora, user, request.memory_id, request.preview)),
            escape(request.reason),
        )
    console.print(table)
    console.print("approve with `memora memories approve REQUEST`, keep with `… reject REQUEST`")


def _with_older_versions(memora: Memora, user: str, memory_id: str, preview: str) -> str:
    """A request's preview and each older version its approval deletes too."""
    older = [unit.content for unit in memora.chain(user, memory_id) if unit.id != memory_id]
    return "\n".join([preview, *(f"also deletes this older version: {text}" for text in older)])


@memories_app.command("approve")
def memories_approve(request_id: str, user: UserOption = "default") -> None:
    """Approve a deletion request: the memory and the older versions it replaced go."""
    memora = open_memora()
    request = next((r for r in memora.pending_forgets(user) if r.id == request_id), None)
    if request is None:
        raise NotFound(f"no deletion request {request_id} for this user")
    chain = memora.chain(user, request.memory_id)
    threads = _blank_threads(
        user, [u.id for u in chain], [request.preview, *(u.content for u in chain)]
    )
    deleted = memora.approve_forget(user, request_id)
    if deleted is None:
        raise NotFound(f"no deletion request {request_id} for this user")
    _report_deleted(memora, deleted, threads)


@memories_app.command("reject")
def memories_reject(request_id: str, user: UserOption = "default") -> None:
    """Reject a deletion request: the memory is kept."""
    if not open_memora().reject_forget(user, request_id):
        raise NotFound(f"no deletion request {request_id} for this user")
    console.print("kept")


@memories_app.command("review")
def memories_review(user: UserOption = "default") -> None:
    """Accept or reject each memory the write path flagged for review."""
    memora = open_memora()
    items = memora.review_items(user)
    if not items:
        console.print("nothing to review")
        return
    for unit in items:
        console.print(f"[bold]{escape(unit.content)}[/bold]")
        for target in unit.metadata.get("review_targets", []):
            other = memora.get(user, target)
            if other is not None:
                console.print(f"  conflicts with: {other.content}", markup=False)
        answer = ask("Keep the new memory and supersede the old? [y/N]: ")
        memora.resolve_review(user, unit.id, accept=answer in {"y", "yes"})
        console.print("accepted" if answer in {"y", "yes"} else "rejected (deleted)")


@memories_app.command("export")
def memories_export(
    user: UserOption = "default",
    out: Annotated[Path | None, typer.Option(help="File to write; stdout if omitted.")] = None,
) -> None:
    """Export every memory as JSON lines."""
    lines = list(open_memora().export(user))
    text = "".join(line + "\n" for line in lines)
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text, encoding="utf-8")
        console.print(f"exported {len(lines)} memories to {out}", markup=False)


@memories_app.command("import")
def memories_import(path: Path, user: UserOption = "default") -> None:
    """Import a JSON-lines export; each line passes the same checks as `add`.

    Lines the policy or the limits refuse are reported by number and reason on
    stderr (exit 1); every other line is still imported. Ids already present
    are skipped.
    """
    try:
        # Undecodable bytes stay in the line (surrogateescape) so that line alone is refused.
        lines = path.read_bytes().decode("utf-8", "surrogateescape").splitlines()
    except OSError as error:
        errors.print(f"import failed: {error}", markup=False)
        raise typer.Exit(1) from None
    report = open_memora().import_lines(user, lines)
    for number, reason in report.rejected:
        errors.print(f"line {number}: rejected ({reason})", markup=False)
    skipped = f", skipped {report.skipped} already present" if report.skipped else ""
    rejected = f", rejected {len(report.rejected)}" if report.rejected else ""
    unlinked = (
        f", dropped {report.unlinked} supersession links to memories outside the file"
        if report.unlinked
        else ""
    )
    console.print(f"imported {report.imported} memories{skipped}{rejected}{unlinked}", markup=False)
    if report.rejected:
        raise typer.Exit(1)


@memories_app.command("reindex")
def memories_reindex() -> None:
    """Re-embed every memory with the configured embedding model."""
    count = open_memora(allow_model_change=True).reindex()
    console.print(f"re-embedded {count} memories with {get_settings().embeddings}")


@memories_app.command("consolidate")
def memories_consolidate(user: UserOption = "default") -> None:
    """Merge near-duplicates, archive expired memories, decay long-unused ones."""
    report = open_memora().consolidate(user)
    console.print(
        f"merged {len(report.merged)}, expired {len(report.expired)}, decayed {len(report.decayed)}"
    )
