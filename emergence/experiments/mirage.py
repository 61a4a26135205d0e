"""Is emergence a mirage of the metric (Schaeffer et al. 2023)? Every task's jumps read with a
continuous metric, at several test-set sizes, and forecast from their start."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="mirage", title="emergence against the metric and the test set", params="mirage",
    chapter="09_mirage", figure="fig-mirage-widths",
    stages=("mirage_analyse",),
    metrics="emergence.analysis.summary_metrics:mirage_metrics", metrics_read=("mirage",),
    rules="emergence.claims.scorecard:mirage_claims", rules_read=("mirage",),
)
