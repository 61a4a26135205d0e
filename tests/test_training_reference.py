"""Training on the smoke profile still gives tests/training_reference.json's numbers
(tests/training_reference.py says how they were made and how to rewrite them)."""
import copy
import json

import pytest

import training_reference as ref


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return ref.reference_runs(tmp_path_factory.mktemp("reference"))


NAMES = ["linear_map", "cellular_automata", "mixer static_mixing", "mixer token_mlp", "mixer unmasked_mixing",
         "mixer mamba2", "mixer gated_deltanet", "mixer rwkv7", "language_model", "language_model+dyck"]


def test_every_run_has_a_reference(runs):
    assert sorted(runs) == sorted(json.loads(ref.REFERENCE.read_text())) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_training_gives_the_reference_numbers(runs, name):
    expected = json.loads(ref.REFERENCE.read_text())[name]
    problems = ref.differences(expected, ref.summary(runs[name]))
    assert not problems, (f"{name} trains differently from tests/training_reference.json (rewrite it with "
                          "`python tests/training_reference.py` only where the change means to move results):\n"
                          + "\n".join(problems[:20]))


def test_the_comparison_catches_a_moved_number_a_new_attribute_a_reordering_and_a_lost_variable(runs):
    found = ref.summary(runs["linear_map"])
    assert ref.differences(found, copy.deepcopy(found)) == []
    moved = copy.deepcopy(found)
    moved["variables"]["loss"]["values"][3] *= 1.01
    assert [p for p in ref.differences(found, moved) if p.startswith("loss.values")]
    small = copy.deepcopy(found)  # within tolerance: not reported
    small["variables"]["loss"]["mean"] *= 1 + ref.RTOL / 10
    assert ref.differences(found, small) == []
    renamed = copy.deepcopy(found)
    renamed["attrs"]["extra"] = 1
    renamed["variables"].pop("parent_mass")
    renamed["attr_order"] = renamed["attr_order"][::-1]
    problems = ref.differences(found, renamed)
    assert any(p.startswith("attrs extra") for p in problems)
    assert any(p.startswith("variable parent_mass") for p in problems)
    assert any(p.startswith("attribute order") for p in problems)
