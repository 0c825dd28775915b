"""A process that writes, searches and forgets one user's memories (for the multi-process tests).

usage: python -m tests.integration.forget_worker DATA_DIR NAME ROUNDS [--forget-all]
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from memora.api import Memora
from memora.config import load_settings
from memora.models import MemorySource, MemoryUnit

WORDS = [
    "amber",
    "basil",
    "cobalt",
    "dune",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kelp",
    "lotus",
]


def main() -> None:
    data_dir, name, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    forget_all = "--forget-all" in sys.argv
    rng = random.Random(name)
    memora = Memora(load_settings(data_dir=data_dir))
    if forget_all:
        ids = memora.ingest(
            [
                MemoryUnit(
                    id=f"{name}-{n}",
                    user_id="alice",
                    content=f"{name} note {n}: {w}",
                    source=MemorySource(actor="worker"),
                )
                for n, w in enumerate(WORDS * 4)
            ]
        )
        print("ready", flush=True)
        for memory_id in ids:
            memora.forget("alice", memory_id)
        memora.close()
        return
    for n in range(rounds):
        unit = MemoryUnit(
            id=f"{name}-{n}",
            user_id="alice",
            content=f"{name} keeps a {rng.choice(WORDS)} {rng.choice(WORDS)} box number {n}",
            source=MemorySource(actor="worker"),
        )
        memora.ingest([unit])
        memora.search("alice", f"{rng.choice(WORDS)} box")
        live = [u.id for u in memora.list("alice")]
        if live and rng.random() < 0.6:
            memora.forget("alice", rng.choice(live))
    memora.close()


if __name__ == "__main__":
    main()
