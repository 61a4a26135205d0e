"""Claim 8: other sequence mixers against the transformer on both synthetic tasks.

`sweeps.mixers.architectures` names the architectures (the transformer and the mixers of
emergence/core/mixers.py) by the model keys they change: `mixer`, `n_head` and the mixer's own
shape keys. Every other model key comes from the task's section, and with
`match_parameters` each non-transformer's MLP width is chosen so its parameter count
matches the transformer's at that setting (the count of every cell is stored and reported).

Cells: every architecture x (linear map at `linear_map.state_size` with each sparsity of
`linear_map.sparsities`) and x (cellular automata at each of `cellular_automata.state_sizes`,
token batch fixed across S), all without the attention bias. Each cell is trained through
the shared cell cache, so the transformer cells coincide with the other sweeps' cells
wherever their configurations do. Parameter counts outside `tolerance` of the transformer's
stop the stage before any training, naming the architecture.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from emergence.common.params import architecture_seeds
from emergence.common.schema import ConfigError, number, to_params
from emergence.core.kernel_refusals import refusal
from emergence.core.mixer_kernels import KERNELS, check_available
from emergence.core.mixers import MIXERS
from emergence.core.model import matched_d_mlp, parameter_count
from emergence.core.train import CompileMode, resolve_device
from emergence.runs.cells import Budget, Cell, Setting, SweepFile, task_module, task_of, with_budget

SWEEP = "mixers"
TASKS = ("linear_map", "cellular_automata")
# The shape keys each mixer reads (emergence/core/mixers.py); the others take ModelConfig's defaults.
SHAPE_KEYS = {"mamba2": {"d_state", "expand", "conv_kernel"}, "gated_deltanet": {"conv_kernel"}}


@dataclass(frozen=True, kw_only=True)
class LearningRates:
    """An architecture's AdamW learning rate per task; unset takes the task's train.lr."""
    linear_map: float | None = number(0.0, 10.0, default=None)         # on the linear map
    cellular_automata: float | None = number(0.0, 10.0, default=None)  # on the automata


@dataclass(frozen=True, kw_only=True)
class SeedCounts:
    """An architecture's seeds per task; unset takes the sweep's n_seeds for that task."""
    linear_map: int | None = number(1, 100_000, default=None)         # on the linear map
    cellular_automata: int | None = number(1, 100_000, default=None)  # on the automata


@dataclass(frozen=True, kw_only=True)
class Architecture:
    """One architecture of the comparison. Unset (null or absent) keys take the task's value:
    n_head the task model's, lr its train.lr, compile its train.compile, n_seeds the sweep's
    for that task; tasks every task, sparsities every sparsity of the linear map's."""
    mixer: Literal[MIXERS]                         # the token-mixing slot (emergence/core/mixers.py)
    profiles: list[Literal["default", "smoke", "paper"]]  # the profiles that run it
    tasks: list[Literal[TASKS]] | None = None      # the tasks it runs (None: both)
    sparsities: list[int] | None = number(1, 4096, default=None)  # its linear-map sparsities (None: all)
    n_head: int | None = number(1, 1024, default=None)    # heads (None: the task model's)
    d_state: int | None = number(1, 1024, default=None)   # mamba2: state size per head
    expand: int | None = number(1, 16, default=None)      # mamba2: d_inner / d_model
    conv_kernel: int | None = number(1, 64, default=None)  # mamba2, gated_deltanet: short convolution width
    lr: LearningRates | None = None                # its own learning rate per task
    n_seeds: SeedCounts | None = None              # its own seed count per task
    compile: CompileMode | None = None             # its own train.compile (None: the task's)

    def check(self, key: str) -> None:
        for name in ("d_state", "expand", "conv_kernel"):
            if getattr(self, name) is not None and name not in SHAPE_KEYS.get(self.mixer, set()):
                raise ConfigError(f"{key}.{name}: {self.mixer} does not read it (only "
                                  f"{', '.join(m for m, keys in SHAPE_KEYS.items() if name in keys)} do)")


@dataclass(frozen=True, kw_only=True)
class LinearMapSettings(Budget):
    """The comparison on the linear map: its S, each s it runs, its budget."""
    state_size: int = number(1, 4096)              # S
    sparsities: list[int] = number(1, 4096)        # each s, a setting of its own
    batch_size: int = number(1, 1_000_000)         # sequences per step

    def check(self, key: str) -> None:
        bad = [s for s in self.sparsities if s > self.state_size]
        if bad:
            raise ConfigError(f"{key}.sparsities: each must be <= state_size ({self.state_size}), got {bad}")


@dataclass(frozen=True, kw_only=True)
class AutomataSettings(Budget):
    """The comparison on the automata: each S it runs, its budget."""
    state_sizes: list[int] = number(1, 4096)       # each S, a setting of its own
    batch_tokens: int = number(1, 100_000_000)     # tokens per step, fixed across S (as sweeps.ca_state_size)


@dataclass(frozen=True, kw_only=True)
class MixerSweepArgs:
    """sweeps.mixers: the architectures compared and the task settings they run."""
    match_parameters: bool                         # each mixer's MLP width set to match the transformer's count
    architectures: dict[str, Architecture]
    linear_map: LinearMapSettings
    cellular_automata: AutomataSettings
    tolerance: float = number(0.0, 1.0)            # a count further off than this fraction stops the stage
    kernels: Literal[KERNELS] = "reference"        # the mixers' cores: this package's, or the CUDA libraries' 

    def check(self, key: str) -> None:
        for name, arch in self.architectures.items():
            if not name.replace("_", "").isalnum():
                raise ConfigError(f"{key}.architectures.{name}: names are letters, digits and '_'")
            stray = sorted(set(arch.sparsities or ()) - set(self.linear_map.sparsities))
            if stray:
                raise ConfigError(f"{key}.architectures.{name}.sparsities: each must be one of linear_map.sparsities "
                                  f"({self.linear_map.sparsities}), got {stray}")


def runs_setting(arch: Architecture, task: str, overrides: dict) -> bool:
    """Whether an architecture runs a task setting (its `tasks` and, on the linear map, `sparsities`)."""
    if arch.tasks is not None and task not in arch.tasks:
        return False
    return task != "linear_map" or arch.sparsities is None or overrides["sparsity"] in arch.sparsities


def settings(sweep: MixerSweepArgs) -> list[tuple[str, dict, str]]:
    """(task, task overrides, setting label) for every task setting of the comparison."""
    lm, ca = sweep.linear_map, sweep.cellular_automata
    out = [("linear_map", {"state_size": lm.state_size, "sparsity": s}, f"S{lm.state_size:02d}_s{s:02d}")
           for s in lm.sparsities]
    out += [("cellular_automata", {"state_size": S}, f"S{S:03d}") for S in ca.state_sizes]
    return out


def seeds(sweep: MixerSweepArgs, arch: Architecture | None, task: str) -> int:
    """The seeds an architecture (None: one a profile's overlay leaves out) trains on `task`
    (`architecture_seeds`, the rule the scorecard reads a profile's counts by)."""
    return architecture_seeds(to_params(sweep), None if arch is None else to_params(arch), task)


def cell_config(setting: Setting, sweep: MixerSweepArgs, task: str, overrides: dict, arch: Architecture) -> Cell:
    """The cell: the task section with the sweep's budget and the architecture's model."""
    section, budget = setting.section(task), getattr(sweep, task)
    batch = (max(1, budget.batch_tokens // (overrides["state_size"] * section.task.n_states))
             if task == "cellular_automata" else budget.batch_size)
    config = with_budget(section, overrides, budget, batch_size=batch, n_seeds=seeds(sweep, arch, task))
    # no intervention: the bias acts on attention scores only
    config = replace(config, bias=replace(config.bias, strength=0.0))
    rate = getattr(arch.lr, task) if arch.lr is not None else None
    train = config.train
    if rate is not None:  # the architecture's own learning rate on this task; unset keeps the task's
        train = replace(train, lr=rate)
    if arch.compile is not None:  # the architecture's own train.compile
        train = replace(train, compile=arch.compile)
    model = config.model if arch.n_head is None else replace(config.model, n_head=arch.n_head)
    if arch.mixer == "attention":  # the other keys shape mixers only: keep the cell equal to other sweeps'
        return replace(config, model=model, train=train)
    reference = config.model
    model = replace(model, mixer=arch.mixer, d_state=arch.d_state, expand=arch.expand,
                    conv_kernel=arch.conv_kernel, kernels=sweep.kernels)
    if sweep.match_parameters:
        module = task_module(task)
        layout = module.layout_of(config.task)
        target = parameter_count(module.model_config(reference, layout))
        model = replace(model, d_mlp=matched_d_mlp(module.model_config(model, layout), target))
    return replace(config, model=model, train=train)


def architectures(setting: Setting, sweep: MixerSweepArgs) -> dict[str, Architecture]:
    """The architectures this profile runs."""
    return {name: arch for name, arch in sweep.architectures.items() if setting.profile in arch.profiles}


def cells(setting: Setting, sweep: MixerSweepArgs) -> list[tuple[str, Cell]]:
    """(cell name, cell) for every architecture this profile runs x setting, in a stable order."""
    out = []
    for task, overrides, label in settings(sweep):
        for arch_name, arch in architectures(setting, sweep).items():
            if not runs_setting(arch, task, overrides):
                continue
            out.append((f"{task}-{label}-{arch_name}", cell_config(setting, sweep, task, overrides, arch)))
    return out


def parameter_counts(planned: list[tuple[str, Cell]]) -> dict[str, int]:
    out = {}
    for name, config in planned:
        module = task_module(task_of(config))
        out[name] = parameter_count(module.model_config(config.model, module.layout_of(config.task)))
    return out


def check_parameter_match(setting: Setting, sweep: MixerSweepArgs, planned: list[tuple[str, Cell]]) -> None:
    """Every architecture's count within `tolerance` of the transformer's at the same setting."""
    if not sweep.match_parameters:
        return
    counts = parameter_counts(planned)
    reference = next(n for n, a in architectures(setting, sweep).items() if a.mixer == "attention")
    for name, count in counts.items():
        target = counts[name.rsplit("-", 1)[0] + f"-{reference}"]
        if abs(count - target) > sweep.tolerance * target:
            arch = name.rsplit("-", 1)[1]
            raise ConfigError(f"sweeps.mixers.architectures.{arch}: {count} parameters in cell {name}, more than "
                              f"tolerance {sweep.tolerance} away from the transformer's {target} even with the "
                              "MLP width matched (shrink its mixer: n_head, d_state or expand)")


def check_kernels(sweep: MixerSweepArgs, planned: list[tuple[str, Cell]]) -> None:
    """With kernels = cuda: a CUDA training device, every library kernel importable, and none
    known to refuse this device (emergence/core/kernel_refusals.py)."""
    if sweep.kernels != "cuda":
        return
    for name, config in planned:
        if config.model.kernels == "cuda":
            check_available({config.model.mixer}, resolve_device(config.train.device).type)
            if why := refusal(config.model.mixer):
                raise ValueError(f"sweeps.{SWEEP}.kernels = cuda, cell {name}: {why}")


def sweep_files(setting: Setting, sweep: MixerSweepArgs, name: str = SWEEP) -> list[SweepFile]:
    """One file per cell (architecture x setting), after the checks that stop a run before
    anything trains: parameter counts within the tolerance, CUDA kernels where asked."""
    planned = cells(setting, sweep)
    check_parameter_match(setting, sweep, planned)
    check_kernels(sweep, planned)
    files = []
    for cell_name, config in planned:
        task, label, arch_name = cell_name.split("-")  # names hold no '-' (validated)
        files.append(SweepFile(cell_name, [config], {"cell": cell_name, "task": task, "setting": label,
                                                     "architecture": arch_name}))
    return files
