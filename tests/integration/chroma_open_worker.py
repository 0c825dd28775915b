"""A process that waits for a shared start time, then opens one data dir's Chroma collection.

usage: python -m tests.integration.chroma_open_worker DATA_DIR START_EPOCH; prints "opened" or
the error it met.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from memora.embeddings import EmbeddingSpec
from memora.errors import MemoraError
from memora.storage.vectors import ChromaVectorIndex


def main() -> None:
    data_dir, start = Path(sys.argv[1]), float(sys.argv[2])
    index = ChromaVectorIndex(data_dir, EmbeddingSpec(model_id="race-test", dimension=4))
    time.sleep(max(0.0, start - time.time()))
    try:
        collection = index.collection
    except MemoraError as error:
        print(f"{type(error).__name__}: {error}")
        return
    print("opened" if collection.name == "memora_memories" else f"opened {collection.name}")


if __name__ == "__main__":
    main()
