"""A process that adds and searches one user's memories through the full write path.

usage: python -m tests.integration.add_worker DATA_DIR NAME COUNT; prints one JSON line with the
ids the write path returned and the errors it met.
"""

from __future__ import annotations

import json
import random
import sys
import traceback
from pathlib import Path

from memora.api import Memora
from memora.config import load_settings

PLACES = [
    "Lisbon",
    "Kyoto",
    "Quito",
    "Hanoi",
    "Oslo",
    "Lima",
    "Cairo",
    "Perth",
    "Tunis",
    "Riga",
    "Accra",
    "Baku",
]
THINGS = [
    "kayak",
    "violin",
    "bonsai",
    "telescope",
    "sourdough",
    "loom",
    "harp",
    "drone",
    "easel",
    "lathe",
]


def main() -> None:
    data_dir, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    rng = random.Random(name)
    memora = Memora(load_settings(data_dir=data_dir))
    ids, errors = [], []
    for n in range(count):
        text = (
            f"On trip {n} of series {name} I bought a {rng.choice(THINGS)} "
            f"in {rng.choice(PLACES)} for {rng.randint(10, 999)} euros"
        )
        try:
            outcome = memora.add("alice", text)
            if outcome.accepted and outcome.memory_id:
                ids.append(outcome.memory_id)
            memora.search("alice", f"{rng.choice(THINGS)} from {rng.choice(PLACES)}")
        except Exception as error:  # the test counts every one; none is expected
            where = traceback.extract_tb(error.__traceback__)[-1]
            errors.append(f"{type(error).__name__}: {error} ({where.filename}:{where.lineno})")
            traceback.print_exc()
    memora.close()
    print(json.dumps({"ids": ids, "errors": errors}))


if __name__ == "__main__":
    main()
