"""Parameters: load params.yaml, merge the selected profile, validate before any compute.

Every key the stages may read is declared in SCHEMA with its type and allowed range. A bad
value, an unknown key or an unknown profile raises ConfigError naming the key and the
allowed range; stages call `load_params` first, so nothing is computed or written.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from emergence.tasks.corpus import PROBES

REPO_ROOT = Path(__file__).resolve().parent.parent
PROFILES = ("default", "smoke", "paper")


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Spec:
    kind: type | tuple[type, ...]
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        name = self.kind.__name__ if isinstance(self.kind, type) else "number"
        lo = "-inf" if self.low is None else self.low
        hi = "inf" if self.high is None else self.high
        return f"{name} in [{lo}, {hi}]"

    def check(self, key: str, value: Any) -> None:
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        # bool is an int in Python; never accept it where a number is meant.
        if isinstance(value, bool) and bool not in kinds:
            raise ConfigError(f"{key}: expected {self.describe()}, got {value!r}")
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kinds):
            raise ConfigError(f"{key}: expected {self.describe()}, got {value!r} ({type(value).__name__})")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}: expected a finite {self.describe()}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"{key}: expected {self.describe()}, got {value!r}")
        if self.low is not None and value < self.low:
            raise ConfigError(f"{key}: expected {self.describe()}, got {value!r}")
        if self.high is not None and value > self.high:
            raise ConfigError(f"{key}: expected {self.describe()}, got {value!r}")


def _int(low=None, high=None):
    return Spec(int, low, high)


def _float(low=None, high=None):
    return Spec(float, low, high)


def _choice(*choices):
    return Spec((str, bool), choices=choices)


# Keys every synthetic task's section shares (linear_map, cellular_automata).
MODEL_TRAIN_BIAS: dict[str, Spec] = {
    "model.n_layer": _int(1, 64),
    "model.d_model": _int(1, 8192),
    "model.n_head": _int(1, 1024),
    "model.d_mlp": _int(0, 65536),
    "model.norm": _choice("pre", "none"),
    "model.positional": _choice("learned"),
    "train.n_seeds": _int(1, 4096),
    "train.first_seed": _int(0, 2**31 - 1),
    "train.seeds_per_group": _int(1, 4096),
    "train.steps": _int(1, 10_000_000),
    "train.batch_size": _int(1, 1_000_000),
    "train.lr": _float(0.0, 10.0),
    "train.beta1": _float(0.0, 1.0),
    "train.beta2": _float(0.0, 1.0),
    "train.weight_decay": _float(0.0, 10.0),
    "train.warmup_steps": _int(0, 10_000_000),
    "train.grad_clip": _float(0.0, 1e6),
    "train.eval_every": _int(1, 10_000_000),
    "train.checkpoint_log_until": _int(0, 10_000_000),
    "train.checkpoint_every": _int(1, 10_000_000),
    "train.resume_every": _int(1, 10_000_000),
    "train.divergence_loss": _float(0.0, None),
    "train.device": _choice("auto", "cpu", "cuda"),
    "train.threads": _int(0, 1024),
    "train.compile": _choice("none", "default", "max-autotune-no-cudagraphs"),
    "bias.strength": _float(-1e4, 1e4),
    "bias.layers": Spec(str),
    "bias.heads": Spec(str),
    "bias.at_eval": Spec(bool),
}
ANALYSIS: dict[str, Spec] = {
    "analysis.flat_ratio": _float(1.0, 1000.0),
    "analysis.plateau_threshold": _float(0.0, 1.0),
    "analysis.emergence_threshold": _float(0.0, 1.0),
    "analysis.solved_threshold": _float(0.0, 1.0),
    "analysis.smoothing_window": _int(1, 1001),
    "analysis.abrupt_ratio": _float(0.0, 10.0),
    "analysis.coincidence_evals": _float(0.0, 1000.0),
    "analysis.alpha": _float(0.0, 1.0),
}

SCHEMA: dict[str, Spec] = {
    "profile": Spec(str, choices=PROFILES),
    "linear_map.task.state_size": _int(1, 4096),
    "linear_map.task.sparsity": _int(1, 4096),
    "linear_map.task.task_seed": _int(0, 2**31 - 1),
    "linear_map.task.distinct_rows": Spec(bool),
    "linear_map.task.separator": Spec(bool),
    "linear_map.task.loss_positions": _choice("all", "output"),
    "linear_map.task.eval_sequences": _int(1, 1_000_000),
    **{f"linear_map.{k}": v for k, v in {**MODEL_TRAIN_BIAS, **ANALYSIS}.items()},
    "cellular_automata.task.state_size": _int(1, 4096),
    "cellular_automata.task.n_states": _int(2, 4096),
    "cellular_automata.task.n_colours": _int(2, 64),
    "cellular_automata.task.radius": _int(0, 16),
    "cellular_automata.task.periodic": Spec(bool),
    "cellular_automata.task.n_rules": _int(1, 1_000_000),
    "cellular_automata.task.rule_seed": _int(0, 2**31 - 1),
    "cellular_automata.task.loss_positions": _choice("all", "predictable"),
    "cellular_automata.task.eval_sequences": _int(1, 1_000_000),
    **{f"cellular_automata.{k}": v for k, v in {**MODEL_TRAIN_BIAS, **ANALYSIS}.items()},
    # Claim 4: linear map, sparsity x state size (rows run as separate DVC stages).
    "sweeps.sparsity.n_seeds": _int(1, 4096),
    "sweeps.sparsity.steps": _int(1, 10_000_000),
    "sweeps.sparsity.batch_size": _int(1, 1_000_000),
    "sweeps.sparsity.eval_every": _int(1, 10_000_000),
    "sweeps.sparsity.eval_sequences": _int(1, 1_000_000),
    "sweeps.sparsity.grid.*.state_size": _int(1, 4096),
    "sweeps.sparsity.grid.*.sparsities": Spec(str),
    "sweeps.sparsity.grid.*.default": Spec(str),
    "sweeps.sparsity.grid.*.smoke": Spec(str),
    # Claims 6, 7: head count, head size, width and depth on the linear map.
    "sweeps.architecture.state_size": _int(1, 4096),
    "sweeps.architecture.sparsity": _int(1, 4096),
    "sweeps.architecture.mlp_ratio": _int(0, 64),
    "sweeps.architecture.n_seeds": _int(1, 4096),
    "sweeps.architecture.steps": _int(1, 10_000_000),
    "sweeps.architecture.batch_size": _int(1, 1_000_000),
    "sweeps.architecture.eval_every": _int(1, 10_000_000),
    "sweeps.architecture.eval_sequences": _int(1, 1_000_000),
    "sweeps.architecture.cells.*.n_head": _int(1, 1024),
    "sweeps.architecture.cells.*.d_head": _int(1, 1024),
    "sweeps.architecture.cells.*.n_layer": _int(1, 64),
    "sweeps.architecture.cells.*.families": Spec(str),
    "sweeps.architecture.cells.*.profiles": Spec(str),
    # Claims 4, 5 on the cellular automata: state size, with and without the bias.
    "sweeps.ca_state_size.state_sizes": Spec(str),
    "sweeps.ca_state_size.strengths": Spec(str),
    "sweeps.ca_state_size.batch_tokens": _int(1, 100_000_000),
    "sweeps.ca_state_size.n_seeds": _int(1, 4096),
    "sweeps.ca_state_size.steps": _int(1, 10_000_000),
    "sweeps.ca_state_size.eval_every": _int(1, 10_000_000),
    "sweeps.ca_state_size.eval_sequences": _int(1, 1_000_000),
    # Claims 6, 7 on the cellular automata.
    "sweeps.ca_architecture.state_size": _int(1, 4096),
    "sweeps.ca_architecture.mlp_ratio": _int(0, 64),
    "sweeps.ca_architecture.n_seeds": _int(1, 4096),
    "sweeps.ca_architecture.steps": _int(1, 10_000_000),
    "sweeps.ca_architecture.batch_size": _int(1, 1_000_000),
    "sweeps.ca_architecture.eval_every": _int(1, 10_000_000),
    "sweeps.ca_architecture.eval_sequences": _int(1, 1_000_000),
    "sweeps.ca_architecture.cells.*.n_head": _int(1, 1024),
    "sweeps.ca_architecture.cells.*.d_head": _int(1, 1024),
    "sweeps.ca_architecture.cells.*.n_layer": _int(1, 64),
    "sweeps.ca_architecture.cells.*.families": Spec(str),
    "sweeps.ca_architecture.cells.*.profiles": Spec(str),
    # Claim 8: other sequence mixers against the transformer on both tasks.
    "sweeps.mixers.match_parameters": Spec(bool),
    "sweeps.mixers.tolerance": _float(0.0, 1.0),
    "sweeps.mixers.min_speedup": _float(1.0, 1000.0),
    "sweeps.mixers.kernels": _choice("reference", "cuda"),
    "sweeps.mixers.architectures.*.mixer": _choice("attention", "mlp_mixer", "mamba2", "gated_deltanet", "rwkv7"),
    "sweeps.mixers.architectures.*.n_head": _int(0, 1024),
    "sweeps.mixers.architectures.*.d_state": _int(1, 1024),
    "sweeps.mixers.architectures.*.expand": _int(1, 16),
    "sweeps.mixers.architectures.*.conv_kernel": _int(1, 64),
    "sweeps.mixers.architectures.*.lr": _float(0.0, 10.0),
    "sweeps.mixers.architectures.*.compile": _choice("task", "none", "default", "max-autotune-no-cudagraphs"),
    "sweeps.mixers.architectures.*.profiles": Spec(str),
    "sweeps.mixers.linear_map.state_size": _int(1, 4096),
    "sweeps.mixers.linear_map.sparsities": Spec(str),
    "sweeps.mixers.cellular_automata.state_sizes": Spec(str),
    "sweeps.mixers.cellular_automata.batch_tokens": _int(1, 100_000_000),
    **{f"sweeps.mixers.{task}.{k}": spec for task in ("linear_map", "cellular_automata") for k, spec in {
        "n_seeds": _int(1, 4096), "steps": _int(1, 10_000_000), "eval_every": _int(1, 10_000_000),
        "eval_sequences": _int(1, 1_000_000)}.items()},
    "sweeps.mixers.linear_map.batch_size": _int(1, 1_000_000),
    # Claim 5: attention-bias intervention on the linear map.
    "interventions.attention_bias.state_size": _int(1, 4096),
    "interventions.attention_bias.sparsity": _int(1, 4096),
    "interventions.attention_bias.strengths": Spec(str),
    "interventions.attention_bias.n_seeds": _int(1, 4096),
    "interventions.attention_bias.steps": _int(1, 10_000_000),
    "interventions.attention_bias.batch_size": _int(1, 1_000_000),
    "interventions.attention_bias.eval_every": _int(1, 10_000_000),
    "interventions.attention_bias.eval_sequences": _int(1, 1_000_000),
    # Claims 1-3, 9: small language models on the generated corpus, probes, patching.
    "language_model.corpus.corpus_seed": _int(0, 2**31 - 1),
    "language_model.corpus.holdout_mod": _int(2, 1_000_000),
    "language_model.corpus.n_random": _int(4, 100_000),
    "language_model.corpus.digit_length": _int(2, 64),
    "language_model.corpus.repeats": _int(2, 16),
    "language_model.corpus.span_length": _int(2, 64),
    "language_model.corpus.filler_length": _int(0, 256),
    "language_model.corpus.max_period": _int(2, 16),
    "language_model.corpus.pattern_length": _int(4, 256),
    "language_model.corpus.noise_length": _int(2, 256),
    "language_model.corpus.mixture.digits": _float(0.0, None),
    "language_model.corpus.mixture.spans": _float(0.0, None),
    "language_model.corpus.mixture.patterns": _float(0.0, None),
    "language_model.corpus.mixture.ioi": _float(0.0, None),
    "language_model.corpus.mixture.noise": _float(0.0, None),
    "language_model.seq_len": _int(16, 100_000),
    "language_model.sizes.*.n_layer": _int(1, 64),
    "language_model.sizes.*.n_head": _int(1, 1024),
    "language_model.sizes.*.d_head": _int(1, 1024),
    "language_model.sizes.*.mlp_ratio": _int(0, 64),
    **{f"language_model.{k}": v for k, v in MODEL_TRAIN_BIAS.items() if k.startswith("train.")},
    "language_model.pretraining.sizes": Spec(str),
    "language_model.pretraining.dyck_k": _int(1, 64),
    "language_model.pretraining.max_depth": _int(1, 1024),
    "language_model.pretraining.steps": _int(1, 10_000_000),
    "language_model.probes.kinds": Spec(str),
    "language_model.probes.n_prompts": _int(1, 100_000),
    "language_model.probes.solved_accuracy": _float(0.0, 1.0),
    "language_model.patching.stage": _choice("pattern", "scores"),
    "language_model.patching.positions": _choice("all", "answer"),
    "language_model.patching.top_k": Spec(str),
    "pythia.enabled": Spec(bool),
    "pythia.sizes": Spec(str),
    "pythia.seeds": Spec(str),
    "pythia.max_step": _int(0, 143000),
    "pythia.capability": _choice("digits", "words"),
    "pythia.n_prompts": _int(1, 100_000),
    "pythia.solved_accuracy": _float(0.0, 1.0),
    "pythia.top_k": Spec(str),
    "pythia.stage": _choice("pattern", "scores"),
    "pythia.device": _choice("cpu", "cuda"),
    "language_model.analysis.abrupt_ratio": _float(0.0, 10.0),
    "language_model.analysis.few_heads": _int(1, 1_000_000),
    "language_model.analysis.most_of_gap": _float(0.0, 1.0),
    "language_model.analysis.alpha": _float(0.0, 1.0),
    "report.base_rev": Spec(str),
    "report.attention_seeds": _int(1, 4096),
    "report.max_figure_seeds": _int(1, 4096),
}


def int_list(text: str) -> list[int]:
    """'1 2 4' -> [1, 2, 4] (grids are space-separated strings so dvc.yaml can pass them on)."""
    return [int(x) for x in text.split()]


def _check_sweeps(p: dict) -> None:
    for name, row in p["sweeps"]["sparsity"]["grid"].items():
        key = f"sweeps.sparsity.grid.{name}"
        S = row["state_size"]
        try:
            grid = int_list(row["sparsities"])
            subsets = {f: int_list(row[f]) for f in ("default", "smoke")}
        except ValueError:
            raise ConfigError(f"{key}: sparsities, default and smoke must be space-separated integers") from None
        bad = [x for x in grid if not 1 <= x <= S]
        if bad:
            raise ConfigError(f"{key}.sparsities: each must be in [1, state_size={S}], got {bad}")
        for field, values in subsets.items():
            extra = sorted(set(values) - set(grid))
            if extra:
                raise ConfigError(f"{key}.{field}: must be a subset of {key}.sparsities, got extra {extra}")


def _check_cells(sweep: str, cells: dict) -> None:
    families = {"heads", "width", "depth"}
    for name, cell in cells.items():
        key = f"sweeps.{sweep}.cells.{name}"
        bad = set(cell["families"].split("+")) - families
        if bad:
            raise ConfigError(f"{key}.families: names joined by '+' from {sorted(families)}, got {cell['families']!r}")
        bad = set(cell["profiles"].split("+")) - set(PROFILES)
        if bad:
            raise ConfigError(f"{key}.profiles: names joined by '+' from {list(PROFILES)}, got {cell['profiles']!r}")


def _check_architecture(p: dict) -> None:
    arch = p["sweeps"]["architecture"]
    if arch["sparsity"] > arch["state_size"]:
        raise ConfigError(f"sweeps.architecture.sparsity: must be <= state_size ({arch['state_size']}), "
                          f"got {arch['sparsity']}")
    _check_cells("architecture", arch["cells"])
    _check_cells("ca_architecture", p["sweeps"]["ca_architecture"]["cells"])


def _check_task_section(p: dict, name: str) -> None:
    """Model, bias, train and analysis rules every synthetic task's section obeys."""
    model, train, ana = (p[name][k] for k in ("model", "train", "analysis"))
    if model["d_model"] % model["n_head"]:
        raise ConfigError(
            f"{name}.model.n_head: must divide {name}.model.d_model ({model['d_model']}), got {model['n_head']}")
    for field, limit in (("layers", model["n_layer"]), ("heads", model["n_head"])):
        value = p[name]["bias"][field]
        if value != "all":
            try:
                idx = int_list(value)
            except ValueError:
                raise ConfigError(f"{name}.bias.{field}: 'all' or space-separated integers, got {value!r}") from None
            if not idx or any(not 0 <= i < limit for i in idx):
                raise ConfigError(f"{name}.bias.{field}: indices must be in [0, {limit - 1}], got {value!r}")
    if train["seeds_per_group"] > train["n_seeds"]:
        raise ConfigError(
            f"{name}.train.seeds_per_group: must be <= {name}.train.n_seeds ({train['n_seeds']}), "
            f"got {train['seeds_per_group']}")
    if not ana["plateau_threshold"] <= ana["emergence_threshold"] <= ana["solved_threshold"]:
        raise ConfigError(
            f"{name}.analysis.emergence_threshold: need plateau_threshold <= emergence_threshold <= "
            f"solved_threshold, got {ana['plateau_threshold']}, {ana['emergence_threshold']}, {ana['solved_threshold']}")


def _check_linear_map(p: dict) -> None:
    task = p["linear_map"]["task"]
    S, s = task["state_size"], task["sparsity"]
    if s > S:
        raise ConfigError(f"linear_map.task.sparsity: must be <= linear_map.task.state_size ({S}), got {s}")
    _check_task_section(p, "linear_map")


def _check_cellular_automata(p: dict) -> None:
    task = p["cellular_automata"]["task"]
    if 2 * task["radius"] + 1 > task["state_size"]:
        raise ConfigError(f"cellular_automata.task.radius: the window 2r+1 must fit in state_size "
                          f"({task['state_size']}), got r = {task['radius']}")
    if task["n_colours"] ** (2 * task["radius"] + 1) > 10**7:
        raise ConfigError(f"cellular_automata.task.radius: lookup tables of n_colours^(2r+1) entries must stay "
                          f"below 10^7, got {task['n_colours']}^{2 * task['radius'] + 1}")
    _check_task_section(p, "cellular_automata")
    sweep = p["sweeps"]["ca_state_size"]
    key = "sweeps.ca_state_size"
    try:
        sizes = int_list(sweep["state_sizes"])
        strengths = [float(x) for x in sweep["strengths"].split()]
    except ValueError:
        raise ConfigError(f"{key}.state_sizes / strengths: space-separated numbers, got "
                          f"{sweep['state_sizes']!r} / {sweep['strengths']!r}") from None
    small = [S for S in sizes if S < 2 * task["radius"] + 1]
    if small:
        raise ConfigError(f"{key}.state_sizes: each must be >= the window 2r+1 = {2 * task['radius'] + 1}, got {small}")
    if sizes != sorted(set(sizes)) or not sizes:
        raise ConfigError(f"{key}.state_sizes: distinct, increasing, at least one, got {sweep['state_sizes']!r}")
    if 0.0 not in strengths:
        raise ConfigError(f"{key}.strengths: must include 0 (the control), got {sweep['strengths']!r}")
    if 2 * task["radius"] + 1 > p["sweeps"]["ca_architecture"]["state_size"]:
        raise ConfigError(f"sweeps.ca_architecture.state_size: must be >= the window 2r+1 = {2 * task['radius'] + 1}")


WILDCARD_KEYS = tuple(k for k in SCHEMA if "*" in k)

def _check_interventions(p: dict) -> None:
    b = p["interventions"]["attention_bias"]
    key = "interventions.attention_bias"
    if b["sparsity"] > b["state_size"]:
        raise ConfigError(f"{key}.sparsity: must be <= {key}.state_size ({b['state_size']}), got {b['sparsity']}")
    try:
        strengths = [float(x) for x in b["strengths"].split()]
    except ValueError:
        raise ConfigError(f"{key}.strengths: space-separated numbers, got {b['strengths']!r}") from None
    if 0.0 not in strengths:
        raise ConfigError(f"{key}.strengths: must include 0 (the control), got {b['strengths']!r}")


def _check_language_model(p: dict) -> None:
    lm = p["language_model"]
    kinds = lm["probes"]["kinds"].split()
    bad = [k for k in kinds if k not in PROBES]
    if bad or not kinds:
        raise ConfigError(f"language_model.probes.kinds: space-separated names from {list(PROBES)}, got {lm['probes']['kinds']!r}")
    if sum(lm["corpus"]["mixture"].values()) <= 0:
        raise ConfigError("language_model.corpus.mixture: at least one weight must be positive")
    try:
        ks = int_list(lm["patching"]["top_k"])
    except ValueError:
        raise ConfigError(f"language_model.patching.top_k: space-separated integers, got {lm['patching']['top_k']!r}") from None
    if not ks or min(ks) < 1:
        raise ConfigError(f"language_model.patching.top_k: integers >= 1, got {lm['patching']['top_k']!r}")
    longest = max(2 * lm["corpus"]["digit_length"], 2 * lm["corpus"]["span_length"] + lm["corpus"]["filler_length"],
                  lm["corpus"]["pattern_length"], 14)
    if longest > lm["seq_len"]:
        raise ConfigError(f"language_model.seq_len: the longest probe prompt has {longest} tokens, got {lm['seq_len']}")
    train = lm["train"]
    if train["seeds_per_group"] > train["n_seeds"]:
        raise ConfigError(f"language_model.train.seeds_per_group: must be <= language_model.train.n_seeds "
                          f"({train['n_seeds']}), got {train['seeds_per_group']}")
    if not lm["sizes"]:
        raise ConfigError("language_model.sizes: at least one size")
    unknown = [s for s in lm["pretraining"]["sizes"].split() if s not in lm["sizes"]]
    if unknown:
        raise ConfigError(f"language_model.pretraining.sizes: names from language_model.sizes "
                          f"({', '.join(lm['sizes'])}), got {unknown}")
    if 2 * lm["pretraining"]["dyck_k"] > lm["corpus"]["n_random"]:
        raise ConfigError(f"language_model.pretraining.dyck_k: the 2k brackets are written with random-word "
                          f"tokens, so 2k <= language_model.corpus.n_random ({lm['corpus']['n_random']})")


def _check_mixers(p: dict) -> None:
    sweep = p["sweeps"]["mixers"]
    lm, ca = sweep["linear_map"], sweep["cellular_automata"]
    for key, text in (("linear_map.sparsities", lm["sparsities"]), ("cellular_automata.state_sizes", ca["state_sizes"])):
        try:
            values = int_list(text)
        except ValueError:
            raise ConfigError(f"sweeps.mixers.{key}: space-separated integers, got {text!r}") from None
        if any(v < 1 for v in values):
            raise ConfigError(f"sweeps.mixers.{key}: each must be >= 1, got {text!r}")
    bad = [s for s in int_list(lm["sparsities"]) if s > lm["state_size"]]
    if bad:
        raise ConfigError(f"sweeps.mixers.linear_map.sparsities: each must be <= state_size ({lm['state_size']}), got {bad}")
    window = 2 * p["cellular_automata"]["task"]["radius"] + 1
    if any(S < window for S in int_list(ca["state_sizes"])):
        raise ConfigError(f"sweeps.mixers.cellular_automata.state_sizes: each must be >= the window 2r+1 = {window}")
    archs = sweep["architectures"]
    if not any(a["mixer"] == "attention" and p["profile"] in a["profiles"].split("+") for a in archs.values()):
        raise ConfigError("sweeps.mixers.architectures: needs one with mixer: attention (the reference) "
                          f"on profile {p['profile']!r}")
    for name, arch in archs.items():
        if not name.replace("_", "").isalnum():
            raise ConfigError(f"sweeps.mixers.architectures.{name}: names are letters, digits and '_'")
        bad = set(arch["profiles"].split("+")) - set(PROFILES)
        if bad:
            raise ConfigError(f"sweeps.mixers.architectures.{name}.profiles: names joined by '+' from "
                              f"{list(PROFILES)}, got {arch['profiles']!r}")
        for task in ("linear_map", "cellular_automata"):
            d_model = p[task]["model"]["d_model"]
            n_head = arch["n_head"] or p[task]["model"]["n_head"]
            width = arch["expand"] * d_model if arch["mixer"] == "mamba2" else d_model
            if width % n_head:
                raise ConfigError(f"sweeps.mixers.architectures.{name}.n_head: must divide the {arch['mixer']} "
                                  f"width {width} ({task}.model.d_model = {d_model}), got {n_head}")


CROSS_CHECKS = (_check_linear_map, _check_cellular_automata, _check_sweeps, _check_architecture,
                _check_interventions, _check_language_model, _check_mixers)


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


def _schema_key(key: str) -> str | None:
    """The SCHEMA entry for a flat key; `*` in a schema key matches one name (a sweep cell)."""
    if key in SCHEMA:
        return key
    parts = key.split(".")
    for pattern in WILDCARD_KEYS:
        pp = pattern.split(".")
        if len(pp) == len(parts) and all(a == "*" or a == b for a, b in zip(pp, parts)):
            return pattern
    return None


def validate(params: dict) -> dict:
    """Check every key against SCHEMA and the cross-key constraints; return params unchanged."""
    flat = flatten(params)
    for key in flat:
        if _schema_key(key) is None:
            parent = key.rsplit(".", 1)[0]
            close = [k for k in SCHEMA if k.rsplit(".", 1)[0] == parent]
            hint = f" (known keys here: {', '.join(k.rsplit('.', 1)[1] for k in close)})" if close else ""
            raise ConfigError(f"{key}: unknown parameter{hint}")
    for key, spec in SCHEMA.items():
        if "*" in key:
            continue
        if key not in flat:
            raise ConfigError(f"{key}: missing; expected {spec.describe()}")
        spec.check(key, flat[key])
    for key, value in flat.items():
        pattern = _schema_key(key)
        if pattern in WILDCARD_KEYS:
            SCHEMA[pattern].check(key, value)
    for pattern in WILDCARD_KEYS:  # every cell must carry every field of its pattern
        head, _, field = pattern.partition(".*.")
        for cell in section(params, head) if _has(params, head) else {}:
            if f"{head}.{cell}.{field}" not in flat:
                raise ConfigError(f"{head}.{cell}.{field}: missing; expected {SCHEMA[pattern].describe()}")
    for check in CROSS_CHECKS:
        check(params)
    return params


def _has(params: dict, dotted: str) -> bool:
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


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


def section(params: dict, dotted: str) -> dict:
    node: Any = params
    for part in dotted.split("."):
        node = node[part]
    return node


def config_hash(obj: Any) -> str:
    """Stable short hash of a JSON-able config (used to key scratch directories)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


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
