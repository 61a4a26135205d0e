"""Parameters: params.yaml merged with the active profile's overlay, loaded strictly into
typed sections before any compute.

Each section's dataclass lives beside the code that reads it (TrainArgs in train.py, the
tasks' TaskArgs in their experiment modules, each sweep's args in its module, ...); `Params`
below only composes them and states the rules that tie sections together. A bad value, an
unknown key or a missing one raises ConfigError naming the dotted key and what is allowed
(emergence/schema.py); stages call `load_params` first, so nothing is computed or written.
"""
from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from emergence.experiments import cellular_automata, linear_map
from emergence.experiments.architecture_sweep import ArchitectureSweepArgs
from emergence.experiments.bias_intervention import AttentionBiasArgs
from emergence.experiments.ca_state_size_sweep import StateSizeSweepArgs
from emergence.experiments.lm_probes import LanguageModelArgs
from emergence.experiments.mixer_comparison import MixerSweepArgs
from emergence.experiments.precision_check import PrecisionCheckArgs
from emergence.experiments.run_statistics import AnalysisArgs
from emergence.experiments.runner import BiasArgs
from emergence.experiments.sparsity_sweep import SparsitySweepArgs
from emergence.model import ModelArgs
from emergence.pythia import PythiaArgs
from emergence.schema import ConfigError, load, number
from emergence.train import TrainArgs

REPO_ROOT = Path(__file__).resolve().parent.parent
PROFILES = ("default", "smoke", "paper")


@dataclass(frozen=True, kw_only=True)
class TaskSection:
    """What every synthetic task's section holds besides its `task` (the subclasses add it)."""
    model: ModelArgs
    train: TrainArgs
    bias: BiasArgs
    analysis: AnalysisArgs

    def check(self, key: str) -> None:
        for name, limit in (("layers", self.model.n_layer), ("heads", self.model.n_head)):
            chosen = getattr(self.bias, name)
            if chosen is not None and (not chosen or max(chosen) >= limit):
                raise ConfigError(f"{key}.bias.{name}: null (all) or indices in [0, {limit - 1}], got {chosen}")


@dataclass(frozen=True, kw_only=True)
class LinearMapSection(TaskSection):
    task: linear_map.TaskArgs


@dataclass(frozen=True, kw_only=True)
class AutomataSection(TaskSection):
    task: cellular_automata.TaskArgs


@dataclass(frozen=True, kw_only=True)
class Sweeps:
    sparsity: SparsitySweepArgs
    architecture: ArchitectureSweepArgs
    ca_state_size: StateSizeSweepArgs
    ca_architecture: ArchitectureSweepArgs
    mixers: MixerSweepArgs
    precision: PrecisionCheckArgs


@dataclass(frozen=True, kw_only=True)
class Interventions:
    attention_bias: AttentionBiasArgs


@dataclass(frozen=True, kw_only=True)
class ReportArgs:
    base_rev: str                                # parameters and metrics are compared against it
    attention_seeds: int = number(1, 4096)
    max_figure_seeds: int = number(1, 4096)


@dataclass(frozen=True, kw_only=True)
class ClaimsArgs:
    """The verdict rules' thresholds (emergence/verdicts.py), fixed before the run."""
    alpha: float = number(0.001, 0.5)              # level of every test; intervals at 1 - alpha
    n_boot: int = number(100, 1_000_000)           # bootstrap resamples behind every interval
    n_perm: int = number(100, 1_000_000)           # permutations behind the permutation tests
    quartile_ratio: float = number(1.0, 1000.0)    # claim 1: "random times" = KM q75 / q25 at least this
    abrupt_ratio: float = number(0.0, 10.0)        # claim 1: a jump is abrupt below this width / step
    coincidence_evals: float = number(0.0, 1000.0)  # claim 2: tolerance, in evaluation intervals
    large_state_size: int = number(1, 1_000_000)   # claim 4 (linear map): "large S" starts here
    growth_ratio: float = number(1.0, 1000.0)      # claim 4 (automata): plateau ratio, largest / smallest S
    flat_from: int = number(1, 1_000_000)          # claim 5 (automata): flatness from this S on
    flat_ratio: float = number(1.0, 1000.0)        # claim 5 (automata): flat = biased ratio below this
    min_speedup: float = number(1.0, 1000.0)       # claim 8: "about ten times faster" = at least this
    few_heads: int = number(1, 1_000_000)          # claim 3: "a few heads" = the top this many
    most_of_gap: float = number(0.0, 1.0)          # claim 3: "most of the gap" = at least this fraction


@dataclass(frozen=True, kw_only=True)
class Params:
    profile: Literal[PROFILES]
    linear_map: LinearMapSection
    cellular_automata: AutomataSection
    language_model: LanguageModelArgs
    pythia: PythiaArgs
    sweeps: Sweeps
    interventions: Interventions
    claims: ClaimsArgs
    report: ReportArgs

    def check(self, key: str) -> None:
        """Rules across sections: sweeps that override a task's fields stay within its limits."""
        if self.claims.few_heads not in self.language_model.patching.top_k:
            raise ConfigError(f"claims.few_heads: one of language_model.patching.top_k "
                              f"{self.language_model.patching.top_k}, got {self.claims.few_heads}")
        window = self.cellular_automata.task.window
        small = [S for S in self.sweeps.ca_state_size.state_sizes if S < window]
        if small:
            raise ConfigError(f"sweeps.ca_state_size.state_sizes: each must be >= the window 2r+1 = {window}, "
                              f"got {small}")
        if self.sweeps.ca_architecture.state_size < window:
            raise ConfigError(f"sweeps.ca_architecture.state_size: must be >= the window 2r+1 = {window}")
        mixers = self.sweeps.mixers
        if any(S < window for S in mixers.cellular_automata.state_sizes):
            raise ConfigError(f"sweeps.mixers.cellular_automata.state_sizes: each must be >= the window "
                              f"2r+1 = {window}")
        if not any(a.mixer == "attention" and self.profile in a.profiles for a in mixers.architectures.values()):
            raise ConfigError("sweeps.mixers.architectures: needs one with mixer: attention (the reference) "
                              f"on profile {self.profile!r}")
        for name, arch in mixers.architectures.items():
            for task in ("linear_map", "cellular_automata"):
                model = getattr(self, task).model
                n_head = arch.n_head or model.n_head
                width = (arch.expand or 1) * model.d_model if arch.mixer == "mamba2" else model.d_model
                if width % n_head:
                    raise ConfigError(f"sweeps.mixers.architectures.{name}.n_head: must divide the {arch.mixer} "
                                      f"width {width} ({task}.model.d_model = {model.d_model}), got {n_head}")


def validate(params: dict) -> dict:
    """Load every section strictly (types, ranges, unknown and missing keys, cross-section
    rules); return params unchanged."""
    load(Params, params, "")
    return params


def flatten(tree: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def deep_merge(base: dict, overlay: dict, where: str = "") -> dict:
    merged = copy.deepcopy(base)
    for key, value in overlay.items():
        name = f"{where}{key}"
        if isinstance(value, dict):
            if not isinstance(merged.get(key, {}), dict):
                raise ConfigError(f"{name}: profile gives a section where params.yaml has a value")
            merged[key] = deep_merge(merged.get(key, {}), value, name + ".")
        else:
            merged[key] = value
    return merged


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def load_params(root: Path | str = REPO_ROOT, profile: str | None = None) -> dict:
    """params.yaml deep-merged with profiles/<profile>.yaml, validated.

    `profile` overrides the file's `profile` key (used by tests and the bench)."""
    root = Path(root)
    base = _read_yaml(root / "params.yaml")
    name = profile if profile is not None else base.get("profile", "default")
    if name not in PROFILES:
        raise ConfigError(f"profile: expected one of {', '.join(PROFILES)}, got {name!r}")
    params = dict(base, profile=name)
    overlay_path = root / "profiles" / f"{name}.yaml"
    if name != "default" or overlay_path.exists():
        overlay = _read_yaml(overlay_path)
        if "profile" in overlay:
            raise ConfigError(f"profiles/{name}.yaml: must not set `profile`")
        params = deep_merge(params, overlay)
    return validate(params)


def set_profile(name: str, root: Path | str = REPO_ROOT) -> None:
    """Rewrite the `profile:` line of params.yaml in place, keeping every comment."""
    if name not in PROFILES:
        raise ConfigError(f"profile: expected one of {', '.join(PROFILES)}, got {name!r}")
    path = Path(root) / "params.yaml"
    lines = path.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("profile:"):
            comment = line[line.index("#"):] if "#" in line else ""
            lines[i] = f"profile: {name}" + (f"  {comment}" if comment else "\n")
            break
    else:
        raise ConfigError("params.yaml: no top-level `profile:` line to set")
    text = "".join(lines)
    if text != path.read_text():
        tmp = path.with_suffix(".yaml.tmp")
        tmp.write_text(text)
        tmp.replace(path)


if __name__ == "__main__":  # python -m emergence.config [set-profile NAME | check]
    try:
        if len(sys.argv) == 3 and sys.argv[1] == "set-profile":
            set_profile(sys.argv[2])
            load_params()
        elif len(sys.argv) == 2 and sys.argv[1] == "check":
            print(f"params ok (profile {load_params()['profile']})")
        else:
            sys.exit("usage: python -m emergence.config [check | set-profile NAME]")
    except ConfigError as err:
        sys.exit(f"invalid parameters: {err}")
