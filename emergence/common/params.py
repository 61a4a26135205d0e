"""params.yaml and the profile overlays as plain YAML: read, deep-merged, flattened, and the
`profile:` line rewritten. Nothing here imports a section's schema.

Stages read their params through this module and `emergence.pipeline.config` validates them. The
split keeps each stage's import closure (its DVC deps) to the code that computes its
results: validation decides whether a stage may run, never what it computes, and runs as
its own first stage (`validate_params`), which reruns whenever params or a schema change.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from emergence.common.schema import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]
PROFILES = ("default", "smoke", "paper")


def on_profile(entry: dict, profile: str) -> bool:
    """Whether a sweep's cell (an entry with a `profiles` list) runs on `profile`."""
    return profile in entry["profiles"]


def architecture_seeds(sweep: dict, arch: dict | None, task: str) -> int:
    """The seeds an architecture of the mixer comparison (`sweep`: sweeps.mixers; `arch` one of
    its architectures, None where a profile's overlay leaves it out) trains on `task`: its own
    `n_seeds` there, or the task setting's."""
    return ((arch or {}).get("n_seeds") or {}).get(task) or sweep[task]["n_seeds"]


def sparsities_on(row: dict, profile: str) -> list[int]:
    """The sparsities a row of the sparsity grid runs on `profile`: the paper profile runs
    every one the paper plots, the others their own subsets."""
    return list(row["sparsities"] if profile == "paper" else row[profile])


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


def merged_params(root: Path | str = REPO_ROOT, profile: str | None = None) -> dict:
    """params.yaml deep-merged with profiles/<profile>.yaml, not validated
    (`emergence.pipeline.config.load_params` validates).

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
    return params


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


def misdirected_edits(active: str, now: dict[str, dict], before: dict[str, dict]) -> list[str]:
    """Edits no stage will read, as `dvc exp run -S` can make them: `now` and `before` map
    params.yaml and each profiles/<name>.yaml to their trees (an absent file: {}). An overlay
    of a profile other than `active` is read by no stage; a key of params.yaml that the active
    overlay sets is overridden by it. Returns one sentence per edit, naming what to set instead."""
    problems = []
    for name in PROFILES:
        path = f"profiles/{name}.yaml"
        if name != active and now.get(path, {}) != before.get(path, {}):
            keys = sorted(k for k in flatten(now.get(path, {})).keys() | flatten(before.get(path, {})).keys()
                          if flatten(now.get(path, {})).get(k) != flatten(before.get(path, {})).get(k))
            problems.append(f"{path} changed ({', '.join(keys) or 'its layout'}), but the active profile is "
                            f"{active} (params.yaml `profile`), so no stage reads it: set the key in params.yaml, "
                            f"or select that profile too (-S profile={name})")
    overlay = flatten(now.get(f"profiles/{active}.yaml", {}))
    old, new = flatten(before.get("params.yaml", {})), flatten(now.get("params.yaml", {}))
    for key in sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k) and k != "profile"):
        hidden = [o for o in overlay if o == key or o.startswith(key + ".") or key.startswith(o + ".")]
        if hidden:
            problems.append(f"{key} changed in params.yaml, but the active profile's overlay profiles/{active}.yaml "
                            f"sets {', '.join(hidden)}, which wins: set it there (-S profiles/{active}.yaml:{key}=...)")
    return problems
