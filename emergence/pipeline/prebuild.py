"""Every cell the training stages `dvc repro` will run lack, built at once, before it runs.

    python -m emergence.pipeline.prebuild [--profile NAME]

`make report` runs it between the plan (emergence/pipeline/cost.py) and `dvc repro`. Stage by stage,
each training stage builds its missing cells through the executor's workers
(emergence/runs/executor.py), and a stage with fewer cells than workers leaves the rest idle: the
linear-map run is one cell, the automata's architecture sweep three, and on 8 or 16 cores most
stages have fewer cells than cores. Here the missing cells and language models of every stage
to run (`cost.stages_to_run`) go to one pool of workers, or one SLURM job array, longest first;
the stages then find them in the cell cache and write, byte for byte, what `dvc repro` alone
would have written (a float32 cell's bytes do not depend on the process or the thread count
that trains it). Where even one pool has fewer long cells than workers (on 16 cores, or a SLURM array), the
cells' seed groups go out in their place (emergence/runs/cache.py's `splits`).
CPU-bfloat16 cells that leave the thread count to the training process, whose
cache keys then record its threads, are left to their stages; with `train.threads` set they
join the pool. Where the executor would build in one process (one core, a GPU), this
builds nothing and the stages build as before.

By the executor's own model over the default plan calibrated on 2 cores: 7,201 s of training
against 7,584 s stage by stage (8,502 s in one process); on 8 cores 2,437 s against 5,359 s.
Measured on 2 cores, the gain is not there: four stages' 12 cells from a fresh clone took
3,121 s in the pool (both workers busy 98% of it), about what the same cells' times give stage
by stage (3,000-3,130 s), because the linear-map run's one cell, which its stage trains in its
own process on both threads (875 s), took 1,860 s in a one-thread worker: 2.1 times, where the
executor assumes 1.66. The gain is on more cores, where a stage's few cells leave most idle,
and on SLURM (one array in place of one per stage, each waiting for its slowest task). Its
time goes to data/timings/prebuild.json, on the entry page with the stages'.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from emergence.common.params import PROFILES, REPO_ROOT
from emergence.pipeline.config import load_params, validate
from emergence.pipeline.cost import planned_cells, runs, stages_to_run
from emergence.pipeline.stage import PREBUILD, SCRATCH, record_time, stage_started
from emergence.runs import build_log
from emergence.runs.cache import bound_to_process, build_missing
from emergence.runs.cells import Setting, cell_request
from emergence.runs.language_model import LanguageModelTraining
from emergence.runs.lm_builds import variant_requests

def pooled_requests(params: dict, scratch: Path = SCRATCH,
                    running: set[str] | None = None) -> list[tuple[tuple, dict]]:
    """(cell-cache request, its train section) of every cell and language model the training
    stages among `running` (None: all) ask for, but those bound to their stage's process (CPU
    bfloat16 with the threads left to the process); the cache skips what it holds."""
    out = [(cell_request(cell, scratch, checkpoints), cell.train)
           for stage, planned in planned_cells(params).items() if runs(stage, running)
           for cell, checkpoints in planned]
    if runs("lm_train", running):
        section = LanguageModelTraining.of(params["language_model"])
        out += [(request, section.train) for request in variant_requests(section, scratch).values()]
    return [(request, train) for request, train in out if not bound_to_process(train)]


def prebuild(params: dict, scratch: Path = SCRATCH, running: set[str] | None = None) -> None:
    todo = pooled_requests(params, scratch, running)
    if todo:
        build_missing(scratch, [request for request, _ in todo], Setting.of(params).execution,
                      [train for _, train in todo], desc="cells of every stage")


def main(argv: list[str], scratch: Path = SCRATCH, root: Path = REPO_ROOT) -> int:
    parser = argparse.ArgumentParser(prog="python -m emergence.pipeline.prebuild",
                                     description="Build the cells every training stage `dvc repro` will run lacks, "
                                                 "in one pool of workers.")
    parser.add_argument("--profile", choices=PROFILES, help="a profile other than params.yaml's")
    args = parser.parse_args(argv)
    start = stage_started()
    params = validate(load_params(profile=args.profile) if args.profile else load_params())
    build_log.STAGE = PREBUILD
    prebuild(params, scratch, stages_to_run(params, root))
    record_time(PREBUILD, params["profile"], time.perf_counter() - start, root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
