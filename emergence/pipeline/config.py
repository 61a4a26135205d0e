"""Parameters: params.yaml merged with the active profile's overlay, loaded strictly into
typed sections before any compute.

Reading and merging the YAML is emergence/common/params.py's; this module validates. Each
section's dataclass lives beside the code that reads it (TrainArgs in train.py, the
tasks' TaskArgs in their experiment modules, each sweep's args in its module, ...); `Params`
below only composes them and states the rules that tie sections together. A bad value, an
unknown key or a missing one raises ConfigError naming the dotted key and what is allowed
(emergence/common/schema.py). The stage validate_params (`check PATH`) writes the validated,
merged params to data/params.json (the report's record of them); every other stage validates
them itself where that file is out of date (emergence/pipeline/stage.py), so nothing is
computed or written before validation. In a DVC experiment, an edit that no stage would read
(an inactive profile's overlay, a key the active overlay overrides) stops it here.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, make_dataclass
from pathlib import Path
from typing import Literal

import yaml

from emergence.analysis.events import AnalysisArgs
from emergence.analysis.mirage_analysis import MirageArgs
from emergence.claims.thresholds import ClaimsArgs
from emergence.common.io import write_json
from emergence.common.params import PROFILES, REPO_ROOT, merged_params, misdirected_edits, set_profile
from emergence.common.schema import ConfigError, load, number
from emergence.core.tasks import cellular_automata, linear_map
from emergence.common.experiments import entry_points
from emergence.pipeline.stage import record_time, rerun_plan, stage_started, written_params
from emergence.runs.executor import ExecutionArgs
from emergence.runs.lm_probes import LanguageModelArgs
from emergence.runs.pythia import PythiaArgs

@dataclass(frozen=True, kw_only=True)
class LinearMapSection(linear_map.Section):
    analysis: AnalysisArgs


@dataclass(frozen=True, kw_only=True)
class AutomataSection(cellular_automata.Section):
    analysis: AnalysisArgs


def declared_sections(parent: str) -> type:
    """The `parent` section (sweeps, interventions) as a dataclass: one field per experiment
    whose declared params sit under it, typed by the experiment's own args."""
    fields = [(e.params.split(".", 1)[1], args) for e, args in entry_points("args")
              if e.params.split(".", 1)[0] == parent]
    return make_dataclass(parent.title(), fields, frozen=True, kw_only=True)


Sweeps = declared_sections("sweeps")
Interventions = declared_sections("interventions")


@dataclass(frozen=True, kw_only=True)
class ReportArgs:
    base_rev: str                                # parameters and metrics are compared against it
    attention_seeds: int = number(1, 4096)       # seeds shown in the attention-map figures
    max_figure_seeds: int = number(1, 4096)      # seeds drawn one by one in per-seed panels


@dataclass(frozen=True, kw_only=True)
class Params:
    profile: Literal[PROFILES]                   # the overlay of profiles/ merged over params.yaml
    execution: ExecutionArgs
    linear_map: LinearMapSection
    cellular_automata: AutomataSection
    language_model: LanguageModelArgs
    pythia: PythiaArgs
    sweeps: Sweeps
    interventions: Interventions
    mirage: MirageArgs
    claims: ClaimsArgs
    report: ReportArgs

    def check(self, key: str) -> None:
        """Rules across sections: sweeps that override a task's fields stay within its limits."""
        if self.claims.few_heads not in self.language_model.patching.top_k:
            raise ConfigError(f"claims.few_heads: one of language_model.patching.top_k "
                              f"{self.language_model.patching.top_k}, got {self.claims.few_heads}")
        window = self.cellular_automata.task.layout.window
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


def refuse_misdirected_edits(root: Path = REPO_ROOT, env: dict | None = None) -> None:
    """In a DVC experiment (`dvc exp run`, which names it in $DVC_EXP_NAME), stop on an edit no
    stage would read (`misdirected_edits`, against the experiment's baseline commit), naming
    the key to set instead; outside one, or without git, nothing."""
    env = os.environ if env is None else env
    if not env.get("DVC_EXP_NAME"):
        return
    baseline = env.get("DVC_EXP_BASELINE_REV") or "HEAD"
    files = ["params.yaml"] + [f"profiles/{name}.yaml" for name in PROFILES]
    now, before = {}, {}
    for rel in files:
        path = Path(root, rel)
        now[rel] = (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}
        shown = subprocess.run(["git", "show", f"{baseline}:{rel}"], cwd=root, capture_output=True, text=True)
        if shown.returncode != 0 and rel == "params.yaml":
            return  # no git history to compare with
        before[rel] = (yaml.safe_load(shown.stdout) or {}) if shown.returncode == 0 else {}
    problems = misdirected_edits(now["params.yaml"].get("profile", "default"), now, before)
    if problems:
        raise ConfigError("this experiment's edits would change nothing a stage reads:\n  " + "\n  ".join(problems))


def load_params(root: Path | str = REPO_ROOT, profile: str | None = None) -> dict:
    """params.yaml deep-merged with profiles/<profile>.yaml, validated.

    `profile` overrides the file's `profile` key (used by tests and the bench)."""
    return validate(merged_params(root, profile))


if __name__ == "__main__":  # python -m emergence.pipeline.config [check [PATH] | plan | set-profile NAME]
    try:
        if len(sys.argv) == 3 and sys.argv[1] == "set-profile":
            set_profile(sys.argv[2])
            load_params()
        elif len(sys.argv) in (2, 3) and sys.argv[1] == "check":
            start = stage_started()
            refuse_misdirected_edits()
            params = load_params()
            print(f"params ok (profile {params['profile']})")
            if len(sys.argv) == 3:  # as the validate_params stage
                print(rerun_plan(written_params(), params))
                # sorted JSON: its bytes change exactly when a value a stage could read does (a
                # comment or a schema edit that still validates changes nothing downstream)
                write_json(params, Path(sys.argv[2]))
                record_time("validate_params", params["profile"], time.perf_counter() - start)
        elif sys.argv[1:] == ["plan"]:  # what an edit reruns, before validate_params has run
            print(rerun_plan(written_params(), load_params()))
        else:
            sys.exit("usage: python -m emergence.pipeline.config [check [PATH] | plan | set-profile NAME]")
    except ConfigError as err:
        sys.exit(f"invalid parameters: {err}")
