"""Does bfloat16 autocast change the emergence statistics? The default cells of the linear map
and of the automata trained in both precisions, side by side.

Each task's section is trained as it stands (its own precision: the linear map's cell is the
one linear_map_train trains, shared through the cell cache) and once more in the other
precision (the bfloat16 twin with `bf16_threads` threads where its section leaves them to
the process), with `n_seeds` seeds where that is set for a task (the rule's permutation test needs enough
seeds for any p to fall below alpha / 4: 7 at alpha 0.1), for `budget_factor` times the section's steps where that is set: the
jump widths are compared, and a jump unfinished at the budget is censored, so a budget that
leaves most jumps unfinished cannot decide. Training is the same up to the section's own
budget (a constant learning rate after warm-up; the schedule does not depend on the total), so
the longer run contains the shorter one. The comparison and the rule that decides whether bf16 may be
a default are emergence/analysis/precision_agreement.py's, applied by the summary stage.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from emergence.common.schema import ConfigError, number
from emergence.core.precision import PRECISIONS
from emergence.runs.cells import Setting, SweepFile, task_module

MAX_FACTOR = 100
MAX_SEEDS = 4096


@dataclass(frozen=True, kw_only=True)
class PrecisionCheckArgs:
    tasks: list[str]                           # task sections compared (linear_map, cellular_automata)
    n_boot: int = number(100, 100_000)        # bootstrap resamples, and sign-flip patterns past 2^n_seeds
    margin: float = number(1.0, 10.0)         # equivalence: every bf16 / float32 ratio inside [1/margin, margin]
    budget_factor: dict[str, int] = field(default_factory=dict)  # task -> its cells train this many times its steps
    n_seeds: dict[str, int] = field(default_factory=dict)  # task -> seeds of both its cells (absent: the section's)
    bf16_threads: int = number(0, 4096)        # threads of a bfloat16 twin whose section leaves them to the process

    def check(self, key: str) -> None:
        if not self.margin > 1:
            raise ConfigError(f"{key}.margin: expected a ratio in (1, 10], got {self.margin!r}")
        for task in self.tasks:
            try:
                task_module(task)
            except ValueError as err:
                raise ConfigError(f"{key}.tasks: {err}") from None
        # keyed by any task the check can compare, so that a profile which compares none keeps the
        # settings its pilots chose for when a task is switched on
        for name, limit, settings in (("budget_factor", MAX_FACTOR, self.budget_factor),
                                      ("n_seeds", MAX_SEEDS, self.n_seeds)):
            for task, value in settings.items():
                try:
                    task_module(task)
                except ValueError as err:
                    raise ConfigError(f"{key}.{name}.{task}: {err}") from None
                if not 1 <= value <= limit:
                    raise ConfigError(f"{key}.{name}.{task}: expected int in [1, {limit}], got {value!r}")


def sweep_files(setting: Setting, check: PrecisionCheckArgs, name: str = "precision") -> list[SweepFile]:
    files = []
    for task in check.tasks:
        cells = []
        section = setting.section(task)
        for precision in PRECISIONS:
            twin = precision != section.train.precision
            train = replace(section.train, precision=precision,
                            steps=section.train.steps * check.budget_factor.get(task, 1),
                            n_seeds=check.n_seeds.get(task, section.train.n_seeds))
            if twin and precision != "float32" and not train.threads:
                # fixed, so that its bytes (which the thread count changes under CPU bfloat16) do
                # not depend on the process that builds it: a worker or SLURM task may build it
                train = replace(train, threads=check.bf16_threads)
            cells.append(replace(section, train=train))
        files.append(SweepFile(task, cells, {"experiment": "sweep:precision", "task": task,
                                             "profile": setting.profile},
                               dim="precision", values=list(PRECISIONS), checkpoints=task == "linear_map"))
    return files
