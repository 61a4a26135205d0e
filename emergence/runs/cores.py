"""The cores this process may run on (its CPU affinity where the system has one): what the
executor shares out among its workers and the scorecard among its resampling processes. No
torch, so a stage that only analyses results can ask without importing it."""
from __future__ import annotations

import os


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
