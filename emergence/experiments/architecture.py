"""Claims 6 and 7: heads, head size, width and depth, on the linear map (the rules read the
automata's shapes too, ca_architecture)."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="architecture", title="heads, width and depth on the linear map", params="sweeps.architecture",
    chapter="04_architecture", figure="fig-architecture",
    args="emergence.runs.sweeps.architecture:ArchitectureSweepArgs",
    files="emergence.runs.sweeps.architecture:sweep_files", summarize="emergence.analysis.architecture:summarize",
    reads=("linear_map.task.task_seed", "linear_map.task.distinct_rows", "linear_map.task.separator",
           "linear_map.task.loss_positions", "linear_map.model.norm", "linear_map.model.positional",
           "linear_map.bias", "linear_map.train"),
    summary_reads=("linear_map.analysis",),
    metrics="emergence.analysis.summary_metrics:architecture_metrics", metrics_read=("architecture_summary",),
    rules="emergence.claims.scorecard:architecture_claims",
    rules_read=("architecture_summary", "ca_architecture_summary"),
)
