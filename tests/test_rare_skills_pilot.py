import numpy as np

from emergence.common.schema import load, to_params
from emergence.pipeline.config import load_params
from emergence.runs.lm_probes import LanguageModelArgs
from emergence.tools import rare_skills_pilot as pilot


def test_the_pilot_picks_the_smallest_weight_most_seeds_learn():
    rows = [{"weight": 0.05, "solved": "2/5"}, {"weight": 0.05, "solved": "5/5"},
            {"weight": 0.1, "solved": "4/5"}, {"weight": 0.1, "solved": "5/5"},
            {"weight": 0.25, "solved": "5/5"}, {"weight": 0.25, "solved": "5/5"}]
    assert pilot.chosen_weight(rows, 0.8) == 0.1
    assert pilot.chosen_weight(rows, 1.0) == 0.25
    assert pilot.chosen_weight(rows[:2], 0.8) is None


def test_pilot_rows_and_params():
    rows = pilot.pilot_row(0.1, ["spans"], np.array([[100, 200, 0]]), np.array([[0, 0, 1]]), budget=1000)
    assert rows == [{"weight": 0.1, "capability": "spans", "solved": "2/3", "first_solved": [100, 200, None],
                     "km_median": 200.0}]
    section = load(LanguageModelArgs, load_params(profile="smoke")["language_model"], "language_model")
    rare = pilot.rare_section(section, "small", 0.05)
    assert to_params(rare.rare_skills) == {"sizes": ["small"], "mixture": {
        **to_params(section.corpus.mixture), "spans": 0.05, "patterns": 0.05}}
    assert rare.corpus == section.corpus and rare.sizes == section.sizes
