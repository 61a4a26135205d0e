import numpy as np

from emergence.pipeline.config import load_params
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
    params = load_params(profile="smoke")
    p = pilot.rare_params(params, "small", 0.05)
    assert p["language_model"]["rare_skills"] == {"sizes": ["small"], "mixture": {
        **params["language_model"]["corpus"]["mixture"], "spans": 0.05, "patterns": 0.05}}
    assert params == load_params(profile="smoke")          # the input is not edited
