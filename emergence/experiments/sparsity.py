"""Claim 4: the plateau grows with the sequence length S and peaks at intermediate sparsity s."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="sparsity", title="plateau against sparsity and sequence length", params="sweeps.sparsity",
    chapter="02_sparsity", figure="fig-sparsity-plateau",
    stages=("sparsity", "sparsity_summary"),
    args="emergence.runs.sweeps.sparsity:SparsitySweepArgs",
    cells="emergence.runs.sweeps.sparsity:planned_cells", train_stage="sparsity",
    metrics="emergence.analysis.summary_metrics:sparsity_metrics", metrics_read=("sparsity_summary",),
    rules="emergence.claims.scorecard:sparsity_claims", rules_read=("sparsity_summary",),
)
