"""Claim 5 on the linear map: a bias towards the relevant tokens shortens the plateau."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="attention_bias", title="an attention bias towards the relevant tokens",
    params="interventions.attention_bias", chapter="03_attention_bias", figure="fig-bias-plateau",
    stages=("attention_bias", "attention_bias_summary"),
    args="emergence.runs.sweeps.attention_bias:AttentionBiasArgs",
    cells="emergence.runs.sweeps.attention_bias:planned_cells", train_stage="attention_bias",
    metrics="emergence.analysis.summary_metrics:attention_bias_metrics", metrics_read=("attention_bias_summary",),
    rules="emergence.claims.scorecard:attention_bias_claims", rules_read=("attention_bias_summary",),
)
