"""One search in a fresh process: ``python -m evals.cold_search DATA_DIR USER QUERY``.

Prints one JSON object: milliseconds to import and open the library and to answer the
first search (wall clock, and CPU time, which another busy process on the machine does
not inflate), and the process's peak resident memory. ``memora eval perf`` runs it in a
subprocess, so the figure includes everything a new process pays.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> dict[str, float]:
    """Open the library on ``argv[0]`` and search ``argv[1]``'s memories for ``argv[2]``."""
    started = time.perf_counter()
    from memora.api import Memora
    from memora.config import load_settings

    memora = Memora(load_settings(data_dir=Path(argv[0])))
    opened = time.perf_counter()
    cpu_before = time.process_time()
    memora.search(argv[1], argv[2])
    searched = time.perf_counter()
    cpu = time.process_time() - cpu_before
    memora.close()
    return {
        "open_ms": (opened - started) * 1000,
        "first_search_ms": (searched - opened) * 1000,
        "first_search_cpu_ms": cpu * 1000,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
