"""Progress of the analysis's long loops (per-cell fits, bootstrap replicates) on stderr.

A study with seeds and dense schedules keeps `isocompute analyze` busy for
minutes; its log should say where it is. Shown only when the `isocompute`
logger speaks at INFO (the CLI's `setup_logging`; a library caller stays
quiet): a tqdm bar when stderr is a terminal, else a log line at most every
`LOG_EVERY_S` seconds, so a job log grows by lines, not by bar redraws.
"""

from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("isocompute")

LOG_EVERY_S = 30.0


def progress(items, *, total: int | None = None, desc: str):
    """`items`, yielded as they are, with their progress shown (see the module's header)."""
    if not log.isEnabledFor(logging.INFO):
        yield from items
        return
    total = len(items) if total is None and hasattr(items, "__len__") else total
    if sys.stderr.isatty():
        from tqdm import tqdm

        yield from tqdm(items, total=total, desc=desc, file=sys.stderr, mininterval=1.0, leave=False)
        return
    start = last = time.perf_counter()
    done = 0
    for item in items:
        yield item
        done += 1
        now = time.perf_counter()
        if now - last >= LOG_EVERY_S:
            last = now
            of = f"/{total}" if total is not None else ""
            log.info("analyze: %s %d%s (%.0f s)", desc, done, of, now - start)
