"""A writer process for the concurrency test: records episodes [start, stop) of one round in batches.

Usage: python registry_writer.py URL HOME ROUND_ID START STOP BATCH GO_FILE
Prints the total of new episodes it wrote.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from registry_factories import make_pack, records_for

from registry import Registry


def main() -> None:
    url, home, round_id, start, stop, batch, go = sys.argv[1:8]
    pack = make_pack(0, n_train=6, n_heldout=4)
    records = records_for(pack, int(stop) - int(start), start=int(start))
    reg = Registry(url, home)
    deadline = time.monotonic() + 30
    while not Path(go).exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    written = 0
    size = int(batch)
    for i in range(0, len(records), size):
        written += reg.record_episodes(int(round_id), records[i:i + size])
    reg.close()
    print(written)


if __name__ == "__main__":
    main()
