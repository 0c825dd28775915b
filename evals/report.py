"""`memora eval all`: run every suite, then write report.md and PNG plots.

Each suite runs as its own `memora eval … --json` process, exactly as a person
would run it, so the report shows the figures those commands print.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.update import FIELDS

KS = (1, 5, 10, 25, 50)
CATEGORIES = ("overall", "multi-hop", "temporal", "open-domain", "single-hop")
_STYLES = ("-", "--", ":", "-.")
"""Line styles per system, so systems with identical figures stay visible."""
UPDATE_FIELDS = FIELDS


@dataclass(frozen=True)
class Suite:
    """One evaluation command and where its data comes from."""

    name: str
    args: list[str]


def suites(bench: Path, selection: Path, sizes: str, peers: bool, eventlog: Path) -> list[Suite]:
    """The commands `eval all` runs, in order."""
    peer_flag = ["--peers"] if peers else []
    return [
        Suite(
            "locomo", ["locomo", "--data", str(bench / "locomo" / "locomo_dev.json"), *peer_flag]
        ),
        Suite(
            "update",
            [
                "update",
                "--data",
                str(bench / "letta_update" / "core_memory_update_dev.jsonl"),
                *peer_flag,
            ],
        ),
        Suite("eventlog", ["eventlog", "--data", str(eventlog)]),
        Suite("selection", ["selection", "--data", str(selection)]),
        *[
            Suite(name, [command, "--data", str(path)])
            for name, command, path in held_out_sets(selection, eventlog)
            if path.exists()
        ],
        Suite("agent", ["agent", "--data", str(bench / "goodai_ltm")]),
        Suite("scale", ["scale", "--sizes", sizes, *peer_flag]),
    ]


HELD_OUT_TITLES = {
    "injection": "Injection set (development set of the injection rules)",
    "selection_blind": "Selection, blind set (written from the label definitions only)",
    "injection_blind": "Injection, blind set (written from the label definitions only)",
    "eventlog_blind": "Event log, blind set (written from the format's definitions only)",
}
"""Report titles of the sets found beside the development sets."""


def held_out_sets(selection: Path, eventlog: Path) -> list[tuple[str, str, Path]]:
    """``(suite, eval command, data file)`` for the other sets kept beside the development
    sets: the injection set and the blind sets, which are measured and never tuned on."""
    return [
        ("injection", "selection", selection.with_name("injection.jsonl")),
        ("selection_blind", "selection", selection.with_name("selection_blind2.jsonl")),
        ("injection_blind", "selection", selection.with_name("injection_blind.jsonl")),
        ("eventlog_blind", "eventlog", eventlog.with_name("eventlog_blind.jsonl")),
    ]


def run_suite(suite: Suite, eval_command: list[str]) -> dict[str, Any]:
    """Run one suite as ``eval_command + suite.args + --json``; a failure becomes an error entry."""
    command = [*eval_command, *suite.args, "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"`memora eval {' '.join(suite.args)}` failed: {last}", "seconds": seconds}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["seconds"] = seconds
    return dict(result)


def _systems(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: value
        for name, value in result.items()
        if isinstance(value, dict) and name != "seconds"
    }


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (no display here)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(figure: Any, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    _pyplot().close(figure)
    return path


def plot_recall(result: dict[str, Any], out: Path) -> Path | None:
    """Recall@k curves, one panel per category, one line per system."""
    plt = _pyplot()
    systems = {n: v for n, v in _systems(result).items() if "overall" in v}
    if not systems:
        return None
    figure, axes = plt.subplots(1, len(CATEGORIES), figsize=(4 * len(CATEGORIES), 3.6), sharey=True)
    for axis, category in zip(axes, CATEGORIES, strict=True):
        for (name, value), style in zip(systems.items(), _STYLES, strict=False):
            recalls = (
                value["overall"] if category == "overall" else value["by_category"].get(category)
            )
            if recalls:
                axis.plot(KS, [recalls[f"recall@{k}"] for k in KS], style, marker="o", label=name)
        axis.set_title(category)
        axis.set_xscale("log")
        axis.set_xticks(KS, [str(k) for k in KS])
        axis.set_xlabel("k")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("recall@k")
    axes[0].legend()
    figure.suptitle("LoCoMo retrieval, recall@k by category")
    return _save(figure, out / "locomo_recall.png")


def plot_scale(result: dict[str, Any], out: Path) -> Path | None:
    """Search and write-path p95 against store size, one line per system."""
    plt = _pyplot()
    systems = {n: v for n, v in _systems(result).items() if "sizes" in v}
    if not systems:
        return None
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, value in systems.items():
        sizes = sorted(value["sizes"], key=int)
        xs = [int(size) for size in sizes]
        for axis, field in zip(axes, ("search_ms", "write_ms"), strict=True):
            ys = [value["sizes"][size].get(field, {}).get("p95") for size in sizes]
            points = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
            if points:
                axis.plot(*zip(*points, strict=True), marker="o", label=name)
    for axis, title in zip(axes, ("search p95 (ms)", "write path p95 (ms)"), strict=True):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("memories in the store")
        axis.set_title(title)
        axis.grid(alpha=0.3)
        axis.legend()
    return _save(figure, out / "scale_latency.png")


def plot_update(result: dict[str, Any], out: Path) -> Path | None:
    """Grouped bars of the update metrics, one group per metric, one bar per system."""
    plt = _pyplot()
    systems = {n: v for n, v in _systems(result).items() if "update_win" in v}
    if not systems:
        return None
    fields = [f for f in UPDATE_FIELDS if any(f in v for v in systems.values())]
    figure, axis = plt.subplots(figsize=(9, 3.8))
    width = 0.8 / len(systems)
    for index, (name, value) in enumerate(systems.items()):
        xs = [f + index * width for f in range(len(fields))]
        axis.bar(xs, [float(value.get(f, 0.0)) for f in fields], width, label=name)
    axis.set_xticks([f + 0.4 - width / 2 for f in range(len(fields))], fields)
    axis.set_ylim(0, 1)
    axis.set_title("Fact updates (Letta dev set); higher is better for the first two")
    axis.legend()
    return _save(figure, out / "update_metrics.png")


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 else f"{value:.3f}" if value < 10 else f"{value:.1f}"
    if isinstance(value, dict) and "p50" in value:
        return f"{value['p50']:.1f} / {value['p95']:.1f}"
    return str(value)


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _errors(result: dict[str, Any]) -> list[str]:
    lines = []
    if "error" in result:
        lines.append(f"- suite failed: {result['error']}")
    for name, value in _systems(result).items():
        if "error" in value:
            lines.append(f"- {name}: {value['error']}")
    return lines


def _locomo_section(result: dict[str, Any]) -> list[str]:
    rows = []
    for name, value in _systems(result).items():
        if "overall" in value:
            rows.append(
                [
                    name,
                    *[value["overall"][f"recall@{k}"] for k in KS],
                    value.get("search_ms", {}),
                    value.get("ingest_per_s", ""),
                ]
            )
    section = [
        "## LoCoMo retrieval",
        "",
        _table(["system", *[f"R@{k}" for k in KS], "search ms p50 / p95", "ingest/s"], rows),
        "",
    ]
    extra = [
        [
            name,
            value.get("precision", {}).get("precision@5", ""),
            value.get("precision", {}).get("precision@10", ""),
            value.get("context_tokens", ""),
            value.get("cost_per_useful_recall", ""),
        ]
        for name, value in _systems(result).items()
        if "overall" in value
    ]
    if any(row[1] != "" for row in extra):  # older results lack these fields
        section += [
            _table(
                [
                    "system",
                    "precision@5",
                    "precision@10",
                    "context tokens / query (top 5)",
                    "tokens per retrieved evidence turn",
                ],
                extra,
            ),
            "",
        ]
    return section + ["![recall@k](locomo_recall.png)", ""]


def _update_section(result: dict[str, Any]) -> list[str]:
    systems = {n: v for n, v in _systems(result).items() if "update_win" in v}
    fields = [f for f in UPDATE_FIELDS if any(f in v for v in systems.values())]
    rows = [[name, *[value.get(f, "") for f in fields]] for name, value in systems.items()]
    return [
        "## Fact updates (Letta)",
        "",
        _table(["system", *fields], rows),
        "",
        "![update metrics](update_metrics.png)",
        "",
    ]


def _eventlog_section(
    result: dict[str, Any],
    title: str = "Event log (repeated events, lists, counters, updates, repeats)",
) -> list[str]:
    value = result.get("memora", {})
    if "distinct_kept" not in value:
        return [f"## {title}", ""]
    rows = [
        [
            kind,
            row["cases"],
            row["cases_passed"],
            row["distinct_kept"],
            f"{row['wrongly_superseded']} of {row['keep_facts']}",
            f"{row['stale']} of {row['drop_facts']}",
        ]
        for kind, row in [*value.get("by_kind", {}).items(), ("all", value)]
    ]
    actions = ", ".join(f"{name} {n}" for name, n in sorted(value.get("actions", {}).items()))
    return [
        f"## {title}",
        "",
        _table(["kind", "cases", "passed", "distinct_kept", "wrongly superseded", "stale"], rows),
        "",
        f"Write path actions: {actions}.",
        "",
    ]


def _selection_section(result: dict[str, Any], title: str = "Selection (policy gate)") -> list[str]:
    value = result.get("memora", {})
    if "precision" not in value:
        return [f"## {title}", ""]
    by_reason = value.get("by_reason", {})
    predicted = sorted(
        {key for counts in by_reason.values() for key in counts} - {"total", "stored"}
    )
    rows = [
        [
            reason,
            counts.get("total", ""),
            counts.get("stored", ""),
            *[counts.get(p, 0) for p in predicted],
        ]
        for reason, counts in by_reason.items()
    ]
    summary = [
        [value["precision"], value["recall"], value["sensitive_stored"], value.get("items", "")]
    ]
    return [
        f"## {title}",
        "",
        _table(["precision", "recall", "sensitive stored", "items"], summary),
        "",
        "Rows: the true label (`none` = should be stored); columns: what the gate did.",
        "",
        _table(["true reason", "total", "stored", *[f"rejected: {p}" for p in predicted]], rows),
        "",
    ]


def _agent_section(result: dict[str, Any]) -> list[str]:
    value = result.get("memora", {})
    rows = []
    for name, suite in value.items():
        if isinstance(suite, dict):
            if "skipped" in suite:
                rows.append([name, "skipped", "skipped", suite.get("total", ""), suite["skipped"]])
            else:
                rows.append(
                    [
                        name,
                        suite.get("pass_rate", ""),
                        suite.get("reply_pass_rate", ""),
                        suite.get("total", ""),
                        "",
                    ]
                )
    return [
        "## Whole agent (GoodAI scripts, offline model)",
        "",
        _table(["test", "pass rate by memory", "by reply", "definitions", "note"], rows),
        "",
    ]


def _scale_section(result: dict[str, Any]) -> list[str]:
    rows = []
    for name, value in _systems(result).items():
        for size, figures in sorted(value.get("sizes", {}).items(), key=lambda i: int(i[0])):
            rows.append(
                [
                    name,
                    size,
                    figures.get("search_ms", {}),
                    figures.get("write_ms", {}),
                    figures.get("ingest_per_s", ""),
                    figures.get("rss_mb", ""),
                    figures.get("disk_mb", ""),
                ]
            )
    notes = [
        f"- {name}: {value['note']}" for name, value in _systems(result).items() if "note" in value
    ]
    headers = [
        "system",
        "memories",
        "search ms p50 / p95",
        "write ms p50 / p95",
        "ingest/s",
        "RSS MB",
        "disk MB",
    ]
    return [
        "## Scale",
        "",
        _table(headers, rows),
        "",
        *notes,
        "",
        "How each figure grows from the smallest to the largest store (ratio):",
        "",
        _growth(result),
        "",
        "![latency vs store size](scale_latency.png)",
        "",
    ]


def _growth(result: dict[str, Any]) -> str:
    fields = [
        ("search p95", "search_ms", "p95"),
        ("write p95", "write_ms", "p95"),
        ("ingest/s", "ingest_per_s", ""),
        ("RSS", "rss_mb", ""),
        ("disk", "disk_mb", ""),
    ]
    rows = []
    for name, value in _systems(result).items():
        sizes = sorted(value.get("sizes", {}), key=int)
        if len(sizes) < 2:
            continue
        first, last = value["sizes"][sizes[0]], value["sizes"][sizes[-1]]
        ratios: list[Any] = [f"{sizes[0]} → {sizes[-1]}"]
        for _, field, part in fields:
            a, b = first.get(field), last.get(field)
            if part:
                a, b = (a or {}).get(part), (b or {}).get(part)
            ratios.append(f"{b / a:.1f}x" if a and b is not None else "—")
        rows.append([name, *ratios])
    return _table(["system", "sizes", *[label for label, _, _ in fields]], rows)


def write_report(results: dict[str, dict[str, Any]], out: Path, command: str) -> Path:
    """Write report.md and the plots into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    plot_recall(results.get("locomo", {}), out)
    plot_update(results.get("update", {}), out)
    plot_scale(results.get("scale", {}), out)
    lines = [
        "# Memora evaluation report",
        "",
        f"Produced by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; every figure "
        "below is what that run measured on this machine, offline.",
        "",
    ]
    lines += _locomo_section(results.get("locomo", {}))
    lines += _update_section(results.get("update", {}))
    lines += _eventlog_section(results.get("eventlog", {}))
    lines += _selection_section(results.get("selection", {}))
    for name, title in HELD_OUT_TITLES.items():
        if name in results:
            section = _eventlog_section if name.startswith("eventlog") else _selection_section
            lines += section(results[name], title)
    lines += _agent_section(results.get("agent", {}))
    lines += _scale_section(results.get("scale", {}))
    lines += [
        "## How to read this",
        "",
        "- All systems use the same embedding model (WordLlama, offline) on the same data.",
        "- mem0 and LangGraph's store coincide on LoCoMo: offline, both are plain cosine search"
        " over the same vectors (mem0's keyword and entity boosts need spaCy models).",
        "- mem0 decides updates with an LLM; offline it runs `add(infer=False)`, which keeps"
        " every fact, so its update figures are those of keeping both facts.",
        "- The event-log set (tests/data/eventlog.jsonl) was written for this project and the"
        " reconciliation rules were developed against it: development figures, as for the"
        " selection set.",
        "- The selection set (tests/data/selection.jsonl) was written for this project and the"
        " policy rules were refined while measuring on it: treat its figures as development"
        " figures; unseen data of the same kinds will score lower.",
        "- The blind sets (tests/data/*blind*.jsonl) were written by helper sessions that saw"
        " only the label definitions; their first measurements are in the README, and they"
        " are never used to tune anything.",
        "- LoCoMo and Letta figures are on the dev splits in ../shared/bench; thresholds were"
        " chosen on halves or folds of them (README, Measured figures).",
        "",
    ]
    problems = [line for result in results.values() for line in _errors(result)]
    if problems:
        lines += ["## What could not run", "", *problems, ""]
    timings = [f"- {name}: {result.get('seconds', 0):.0f} s" for name, result in results.items()]
    lines += ["## Run time", "", *timings, ""]
    (out / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def run_all(
    bench: Path,
    selection: Path,
    out: Path,
    sizes: str,
    peers: bool,
    command: str,
    eval_command: list[str],
    progress: Callable[[str], None] | None = None,
    eventlog: Path = Path("tests/data/eventlog.jsonl"),
) -> Path:
    """Run every suite and write the report; returns the report's path.

    Args:
        command: The command line shown in the report.
        eval_command: The argv prefix that runs one suite (``memora eval`` in a fresh process).
    """
    results: dict[str, dict[str, Any]] = {}
    for suite in suites(bench, selection, sizes, peers, eventlog):
        if progress:
            progress(suite.name)
        results[suite.name] = run_suite(suite, eval_command)
    return write_report(results, out, command)
