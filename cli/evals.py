"""`memora eval …`: each suite prints a table, or one JSON object with --json."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table

from cli.console import console
from evals.common import BACKENDS, scratch_memora
from evals.locomo import KS, run_locomo
from evals.update import FIELDS as UPDATE_FIELDS
from evals.update import run_update

eval_app = typer.Typer(help="Benchmarks on ../shared/bench data.", no_args_is_help=True)

DataOption = Annotated[Path, typer.Option("--data", exists=True, help="Benchmark data file.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
DirOption = Annotated[
    Path | None, typer.Option("--data-dir", help="Keep the built store here (default: temp).")
]
BackendOption = Annotated[
    str,
    typer.Option(
        help="Memora's store: sqlite (files) or postgres (MEMORA_DATABASE_URL and "
        "MEMORA_CHROMA_URL; a scratch database and collection on them, dropped afterwards)."
    ),
]


def _backend(name: str) -> str:
    if name not in BACKENDS:
        raise typer.BadParameter(f"--backend must be one of {', '.join(BACKENDS)}")
    return name


@contextmanager
def progress_bar(label: str, quiet: bool) -> Iterator[Callable[[int, int], None] | None]:
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


def print_json(results: dict[str, Any]) -> None:
    print(json.dumps(results))


PeersOption = Annotated[
    bool,
    typer.Option(
        "--peers",
        help="Also run mem0 and LangGraph's store (LangMem's search) on the same data "
        "with the same embedding model (pip install -e .[bench]).",
    ),
]


def run_systems(
    run: Callable[[Any, Path, Callable[[int, int], None] | None], dict[str, Any]],
    data: Path,
    data_dir: Path | None,
    peers: bool,
    label: str,
    quiet: bool,
    actor: str = "bench",
) -> dict[str, Any]:
    """Run one protocol on Memora, then on each peer; a peer that cannot run gets its reason."""
    from evals.peers import MEMORA, PEERS, PeerUnavailable, bench_embeddings, open_system

    results: dict[str, Any] = {}
    embeddings = bench_embeddings() if peers else None
    for name in (MEMORA, *(PEERS if peers else ())):
        try:
            with (
                open_system(
                    name,
                    data_dir if name == MEMORA else None,
                    embeddings=embeddings,
                    actor=actor,
                ) as system,
                progress_bar(f"{name}: {label}", quiet) as progress,
            ):
                results[name] = run(system, data, progress)
        except PeerUnavailable as error:
            results[name] = {"error": str(error)}
        except Exception as error:  # a peer failing at run time still gets its row
            if name == MEMORA:
                raise
            results[name] = {"error": f"{type(error).__name__}: {error}"}
    return results


_PEER_NOTES = {
    "mem0": "mem0: bulk load through its vector store's batch insert (payloads as its add "
    "writes them); write path add(infer=False): no extraction, no reconciliation (both "
    "need a model, none offline); search with threshold 0 (BM25/entity boosts need spaCy, "
    "not installed: mem0ai\\[nlp] downloads a model).",
    "langgraph_store": "langgraph_store: InMemoryStore vector index searched as LangMem's "
    "create_search_memory_tool does; write path one put: no reconciliation.",
}


def _notes(results: dict[str, Any]) -> None:
    for name, note in _PEER_NOTES.items():
        if name in results and "error" not in results[name]:
            console.print(f"[dim]{note}[/dim]")


@eval_app.command("locomo")
def eval_locomo(
    data: DataOption,
    as_json: JsonOption = False,
    data_dir: DirOption = None,
    peers: PeersOption = False,
) -> None:
    """LoCoMo retrieval: recall@k by category, search latency, ingest rate."""
    results = run_systems(run_locomo, data, data_dir, peers, "questions", as_json)
    if as_json:
        print_json(results)
        return
    table = Table(
        "category", "system", *[f"R@{k}" for k in KS], title=f"LoCoMo retrieval, {data.name}"
    )
    ok = {name: result for name, result in results.items() if "error" not in result}
    categories = [c for c in results["memora"]["by_category"]] + ["overall"]
    for category in categories:
        for name, result in ok.items():
            recalls = (
                result["overall"] if category == "overall" else result["by_category"].get(category)
            )
            if recalls is not None:
                table.add_row(category, name, *[f"{recalls[f'recall@{k}']:.3f}" for k in KS])
        table.add_section()
    for name, result in results.items():
        if "error" in result:
            table.add_row("all", name, f"cannot run: {result['error']}", *[""] * (len(KS) - 1))
    console.print(table)
    speed = Table(
        "system",
        "questions",
        "memories",
        "search p50 ms",
        "search p95 ms",
        "ingest memories/s",
        "P@5",
        "P@10",
        "tokens injected/query",
        "tokens per evidence turn",
        title="LoCoMo: latency, ingest, precision, and the cost of what the agent injects (top 5)",
    )
    for name, result in results.items():
        if "error" in result:
            speed.add_row(name, f"cannot run: {result['error']}", *[""] * 8)
            continue
        speed.add_row(
            name,
            str(result["questions"]),
            str(result["memories"]),
            f"{result['search_ms']['p50']:.1f}",
            f"{result['search_ms']['p95']:.1f}",
            f"{result['ingest_per_s']:.0f}",
            f"{result['precision']['precision@5']:.3f}",
            f"{result['precision']['precision@10']:.3f}",
            f"{result['context_tokens']:.0f}",
            f"{result['cost_per_useful_recall']:.0f}",
        )
    console.print(speed)
    _notes(results)


@eval_app.command("update")
def eval_update(
    data: DataOption,
    as_json: JsonOption = False,
    data_dir: DirOption = None,
    peers: PeersOption = False,
) -> None:
    """Letta fact updates: update_win, answer@1, stale@5, collateral."""
    results = run_systems(run_update, data, data_dir, peers, "rows", as_json, actor="eval-update")
    if as_json:
        print_json(results)
        return
    table = Table(
        "system",
        "update_win",
        "answer@1",
        "stale@5",
        "collateral/row",
        "contradiction rate",
        "staleness rate",
        title=f"Fact updates, {data.name} ({results['memora']['rows']} rows)",
    )
    fields = UPDATE_FIELDS
    for name, result in results.items():
        if "error" in result:
            table.add_row(name, f"cannot run: {result['error']}", *[""] * (len(fields) - 1))
            continue
        table.add_row(name, *[f"{result[key]:.3f}" for key in fields])
    console.print(table)
    if "error" not in results.get("mem0", {"error": ""}):
        console.print(
            "[dim]mem0 offline: add(infer=False) keeps every fact; its update (ADD/UPDATE/DELETE "
            "decided by an LLM) needs a model, so these are its honest offline figures.[/dim]"
        )
    if "error" not in results.get("langgraph_store", {"error": ""}):
        console.print(
            "[dim]langgraph_store: each fact is one put; nothing reconciles old facts.[/dim]"
        )


@eval_app.command("eventlog")
def eval_eventlog(
    data: DataOption, as_json: JsonOption = False, data_dir: DirOption = None
) -> None:
    """Event log: repeated events, lists, counters, updates and repeats through the write path."""
    from evals.eventlog import load_cases, run_eventlog

    load_cases(data)
    with scratch_memora(data_dir) as memora, progress_bar("cases", as_json) as progress:
        result = run_eventlog(memora, data, progress)
    if as_json:
        print_json({"memora": result})
        return
    table = Table(
        "kind",
        "cases",
        "passed",
        "distinct_kept",
        "wrongly superseded",
        "stale",
        title=f"Event log, {data.name}",
    )
    for kind, row in [*result["by_kind"].items(), ("all", result)]:
        if kind == "all":
            table.add_section()
        table.add_row(
            kind,
            str(row["cases"]),
            str(row["cases_passed"]),
            f"{row['distinct_kept']:.3f}",
            f"{row['wrongly_superseded']} of {row['keep_facts']}",
            f"{row['stale']} of {row['drop_facts']}",
        )
    console.print(table)
    actions = ", ".join(f"{name} {count}" for name, count in sorted(result["actions"].items()))
    console.print(f"write path actions: {actions}", markup=False)
    for failure in result["failures"]:
        console.print(
            f"[red]{failure['id']}[/red] ({failure['kind']}): not active {failure['missing']}, "
            f"stale {failure['stale']}"
        )


@eval_app.command("perf")
def eval_perf(
    as_json: JsonOption = False,
    data_dir: DirOption = None,
    users: Annotated[int, typer.Option(help="Users in the store.")] = 5,
    per_user: Annotated[int, typer.Option(help="Memories per user.")] = 10_000,
    big_user: Annotated[
        int, typer.Option(help="Memories of the one big user (0 to skip that part).")
    ] = 50_000,
    backend: BackendOption = "sqlite",
) -> None:
    """Search, write-path and forget latency with USERS x PER_USER synthetic memories, ingest
    rate, and one user with BIG_USER memories (first page, cold search, a foreign write)."""
    from evals.perf import run_big_user, run_perf

    with (
        scratch_memora(data_dir, _backend(backend)) as memora,
        progress_bar("users ingested", as_json) as progress,
    ):
        result = run_perf(memora, users=users, per_user=per_user, progress=progress)
        if big_user:
            result["big_user"] = run_big_user(memora, big_user, progress)
    if as_json:
        print_json({"memora": result})
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
    forget = result["forget_ms"]
    table.add_row(
        f"forget p50 / p95 (user of {forget['user_size']:,})",
        f"{forget['p50']:.1f} / {forget['p95']:.1f} ms",
    )
    if "big_user" in result:
        big = result["big_user"]
        size = f"user of {big['user_size']:,}"
        table.add_row(f"first page of 100 ({size})", f"{big['first_page_ms']:.1f} ms")
        table.add_row(
            f"first search, new process, after the ingest ({size})",
            f"{big['first_search_after_ingest_ms']:.0f} ms",
        )
        table.add_row(
            f"first search, new process, no local vector copy ({size})",
            f"{big['first_search_no_local_copy_ms']:.0f} ms",
        )
        table.add_row(
            f"first search, new process ({size}): wall / CPU",
            f"{big['first_search_ms']:.0f} / {big['first_search_cpu_ms']:.0f} ms",
        )
        table.add_row(
            f"new process: open / peak memory ({size})",
            f"{big['new_process_open_ms']:.0f} ms / {big['new_process_peak_rss_mib']:.0f} MiB",
        )
        table.add_row(
            f"search after another process's write ({size})",
            f"{big['search_after_foreign_write_ms']:.1f} ms",
        )
        table.add_row(f"warm search ({size})", f"{big['warm_search_ms']:.1f} ms")
    console.print(table)


@eval_app.command("overhead")
def eval_overhead(
    as_json: JsonOption = False,
    turns: Annotated[int, typer.Option(help="Chat turns to time.")] = 100,
    store_size: Annotated[int, typer.Option(help="Memories of the user.")] = 10_000,
) -> None:
    """The graph's own time per turn (offline model, SQLite checkpoints), model time excluded."""
    from evals.overhead import run_growth, run_overhead

    with progress_bar("turns", as_json) as progress:
        result = run_overhead(turns, store_size, progress)
    with progress_bar("growth turns", as_json) as progress:
        growth = run_growth(progress=progress)
    result["growth"] = growth
    if as_json:
        print_json({"memora": result})
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
    sizes = growth["checkpoint_bytes"]
    console.print(
        "thread checkpoints ("
        + f"{growth['message_chars']}-character messages): "
        + ", ".join(f"{turns} turns {size / 1024:.0f} KiB" for turns, size in sizes.items())
        + f"; ratio {growth['ratio']:.2f} (linear growth is 3.00)",
        markup=False,
    )


@eval_app.command("agent")
def eval_agent(
    data: Annotated[
        Path, typer.Option("--data", exists=True, file_okay=False, help="The goodai_ltm folder.")
    ],
    as_json: JsonOption = False,
    data_dir: DirOption = None,
) -> None:
    """GoodAI LTM scripts through the whole agent (offline model): Colours, NameList."""
    from evals.agent import run_agent

    with progress_bar("turns", as_json) as progress:
        result = run_agent(data, progress, data_dir)
    if as_json:
        print_json({"memora": result})
        return
    table = Table(
        "test",
        "total",
        "passed by memory",
        "passed by reply",
        title=f"GoodAI LTM, {data.name} (offline model)",
    )
    for name, row in result.items():
        if "skipped" in row:
            table.add_row(name, str(row["total"]), f"skipped: {row['skipped']}", "")
        else:
            table.add_row(
                name,
                str(row["total"]),
                f"{row['passed']} ({row['pass_rate']:.3f})",
                f"{row['reply_passed']} ({row['reply_pass_rate']:.3f})",
            )
    console.print(table)
    for name, row in result.items():
        for failure in row.get("failures", []):
            console.print(f"[red]{name}/{failure['definition']}[/red]:", markup=True)
            for scored in ("memory", "reply"):
                for reason in failure[scored]:
                    console.print(f"  - {scored}: {reason}", markup=False, highlight=False)


JudgementOption = Annotated[
    str | None, typer.Option(help="trained or rules (default: MEMORA_JUDGEMENT).")
]
WriteJudgeOption = Annotated[
    str | None,
    typer.Option(
        "--write-judge",
        help="rules, or chat_model: the configured chat model (MEMORA_CHAT_MODEL) also judges "
        "what the hard rules accept (default: MEMORA_WRITE_JUDGE).",
    ),
]


@eval_app.command("scale")
def eval_scale(
    as_json: JsonOption = False,
    sizes: Annotated[
        str, typer.Option(help="Store sizes, comma-separated (memories over 10 users).")
    ] = "1000,10000,100000",
    peers: PeersOption = False,
    timeout: Annotated[
        float, typer.Option(help="Seconds allowed per system and size before it is capped.")
    ] = 1800.0,
    backend: BackendOption = "sqlite",
) -> None:
    """Search and write latency, ingest rate, peak RSS and disk as the store grows.

    Each system and size runs in its own subprocess, so resident memory is its own.
    """
    from evals.peers import MEMORA, PEERS
    from evals.scale import NOTES, USERS, growth, run_scale

    backend = _backend(backend)
    wanted = sorted({int(size) for size in sizes.split(",") if size.strip()})
    systems = [MEMORA, *(PEERS if peers else ())]
    with progress_bar("system x size", as_json) as progress:
        results = run_scale(systems, wanted, timeout, progress, backend)
    if as_json:
        print_json(results)
        return
    table = Table(
        "system",
        "memories",
        "search p50 / p95 ms",
        "write p50 / p95 ms",
        "ingest memories/s",
        "peak RSS MB",
        "disk MB",
        title=f"Scale: stores of {', '.join(f'{s:,}' for s in wanted)} memories over {USERS} users"
        + (" (Memora on Postgres + a Chroma server)" if backend == "postgres" else ""),
    )
    for name, result in results.items():
        if "error" in result:
            table.add_row(name, f"cannot run: {result['error']}", "", "", "", "", "")
            table.add_section()
            continue
        for size, row in result["sizes"].items():
            if "error" in row:
                table.add_row(name, f"{int(size):,}", row["error"], "", "", "", "")
                continue
            table.add_row(
                name,
                f"{int(size):,}",
                f"{row['search_ms']['p50']:.2f} / {row['search_ms']['p95']:.2f}",
                f"{row['write_ms']['p50']:.2f} / {row['write_ms']['p95']:.2f}",
                f"{row['ingest_per_s']:.0f}",
                f"{row['rss_mb']:.0f}",
                f"{row['disk_mb']:.1f}",
            )
        table.add_section()
    console.print(table)
    ratios = Table(
        "system",
        "search p50",
        "search p95",
        "write p50",
        "write p95",
        "ingest rate",
        "peak RSS",
        "disk",
        title=f"Growth: figure at {max(wanted):,} / figure at {min(wanted):,}",
    )
    keys = ("search_p50", "search_p95", "write_p50", "write_p95", "ingest_per_s", "rss_mb")
    for name, result in results.items():
        grown = growth(result) if "error" not in result else {}
        if not grown:
            continue
        cells = [f"{grown[key]:.2f}x" if grown[key] is not None else "-" for key in keys]
        cells.append(
            f"{grown['disk_mb']:.2f}x" if grown["disk_mb"] is not None else "- (in memory)"
        )
        ratios.add_row(name, *cells)
    if len(wanted) > 1:
        console.print(ratios)
    for name in results:
        if name in NOTES and "error" not in results[name]:
            console.print(f"[dim]{name}: {NOTES[name]}[/dim]")


@eval_app.command("all")
def eval_all(
    out: Annotated[Path, typer.Option(help="Where report.md goes.")] = Path("docs/report"),
    bench: Annotated[Path, typer.Option(help="Benchmark data.")] = Path("../shared/bench"),
    selection: Annotated[Path, typer.Option(help="Labelled selection set.")] = Path(
        "tests/data/selection.jsonl"
    ),
    sizes: Annotated[str, typer.Option(help="Scale store sizes.")] = "1000,10000,100000",
    peers: Annotated[bool, typer.Option(help="Also run mem0 and LangGraph's store.")] = True,
    eventlog: Annotated[Path, typer.Option(help="Event-log cases.")] = Path(
        "tests/data/eventlog.jsonl"
    ),
) -> None:
    """Run every suite (with peers) and write report.md plus PNG plots to OUT."""
    from evals.report import run_all

    command = "memora eval all " + " ".join(sys.argv[3:])
    started = time.perf_counter()

    def show(name: str) -> None:
        console.print(f"[{time.perf_counter() - started:6.0f} s] running {name} …")

    # Each suite runs in its own process, so one suite's memory and caches never skew the next.
    suite_command = [sys.executable, "-m", "cli", "eval"]
    path = run_all(
        bench, selection, out, sizes, peers, command.strip(), suite_command, show, eventlog
    )
    console.print(f"report written to {path}")
