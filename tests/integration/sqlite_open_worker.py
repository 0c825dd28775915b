"""A process that opens a new SQLite row store in each of several rounds, each at a shared time.

usage: python -m tests.integration.sqlite_open_worker DIR START_EPOCH ROUNDS SPACING; opens
DIR/roundN.db at START_EPOCH + N * SPACING and prints one line per round: "opened" or the
error it met.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from memora.errors import MemoraError
from memora.storage.sql_rows import SqliteRowStore


def main() -> None:
    folder, start = Path(sys.argv[1]), float(sys.argv[2])
    rounds, spacing = int(sys.argv[3]), float(sys.argv[4])
    for round_number in range(rounds):
        time.sleep(max(0.0, start + round_number * spacing - time.time()))
        try:
            store = SqliteRowStore(folder / f"round{round_number}.db")
        except MemoraError as error:
            print(f"{type(error).__name__}: {error}", flush=True)
            continue
        store.db.close()
        print("opened", flush=True)


if __name__ == "__main__":
    main()
