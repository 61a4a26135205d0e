"""A corrected docstring in the trainer, on a copy of the smoke build: DVC reruns every stage that
executes it (its bytes changed), and each finds its cells and models in the cache, whose keys
follow the code's syntax, not its text: nothing trains, and every result keeps its bytes."""
import re

import pytest
import yaml

from smoke_build import edit, sh

pytestmark = pytest.mark.pipeline


def _outputs(root) -> dict[str, str]:
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    return {o["path"]: o.get("md5") for stage in lock["stages"].values() for o in stage.get("outs", [])}


def test_a_docstring_in_the_trainer_reruns_its_stages_and_trains_nothing(smoke_repo):
    before = _outputs(smoke_repo)
    edit(smoke_repo / "emergence" / "core" / "train.py", '"""', '"""A corrected docstring. ')
    out = sh(["dvc", "repro", "claims_scorecard"], smoke_repo)  # every result; the report after them
    ran = set(re.findall(r"Running stage '([\w@-]+)'", out.stdout))
    assert {"linear_map_train", "ca_state_size", "mixers", "lm_train"} <= ran, ran
    assert "train group" not in out.stdout + out.stderr  # no training stage's progress bar
    after = _outputs(smoke_repo)
    assert {path: md5 for path, md5 in after.items() if before.get(path) != md5} == {}
