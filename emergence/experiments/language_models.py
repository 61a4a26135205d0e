"""Claims 1, 3 and 9 on small language models: capabilities that appear abruptly at random
steps, recovered by patching a few heads, sped up by pre-pretraining; Pythia where enabled.
Its models train through emergence/runs/lm_builds.py (variants, not cells), which the plan
reads apart."""
from emergence.common.experiments import Experiment

EXPERIMENT = Experiment(
    name="language_models", title="capabilities of small language models", params="language_model",
    chapter="06_language_models", figure="fig-lm-emergence",
    stages=("lm_train", "lm_probe", "lm_patch", "pythia"),
    metrics="emergence.analysis.summary_metrics:language_model_metrics", metrics_read=("lm_probes",),
    rules="emergence.claims.scorecard:lm_claims", rules_read=("lm_probes", "lm_patching"),
)
