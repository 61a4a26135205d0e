"""Claims 1 and 2 on the paper's first task: a sparse linear map learned after a plateau,
each output bit at its own random time, each with its own attention head."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="linear_map", title="the sparse linear map, seed by seed", params="linear_map",
    chapter="01_linear_map", figure="fig-bit-loss",
    stages=("linear_map_data", "linear_map_train", "linear_map_analyse"),
    cells="emergence.runs.sweeps.linear_map:planned_cells", train_stage="linear_map_train",
    rules="emergence.claims.scorecard:linear_map_claims", rules_read=("linear_map_analysis",),
)
