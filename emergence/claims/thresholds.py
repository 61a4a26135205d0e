"""The verdict rules' thresholds (params.yaml `claims`), fixed before the run, and a view of
them that notes which ones a section's rules read (the threshold sensitivity moves only those)."""
from __future__ import annotations

from dataclasses import dataclass

from emergence.common.schema import number


@dataclass(frozen=True, kw_only=True)
class ClaimsArgs:
    """The verdict rules' thresholds (emergence/claims/verdicts.py, emergence/claims/scorecard.py)."""
    alpha: float = number(0.001, 0.5)              # level of every test; intervals at 1 - alpha
    n_boot: int = number(100, 1_000_000)           # bootstrap resamples behind every interval
    n_perm: int = number(100, 1_000_000)           # permutations behind the permutation tests
    quartile_ratio: float = number(1.0, 1000.0)    # claim 1: "random times" = q75 / q25 (lognormal fit) at least this
    abrupt_ratio: float = number(0.0, 10.0)        # claim 1: a jump is abrupt below this width / step
    coincidence_widths: float = number(0.0, 1000.0)  # claim 2: tolerance, in the unit's own jump widths
    large_state_size: int = number(1, 1_000_000)   # claim 4 (linear map): "large S" starts here
    growth_ratio: float = number(1.0, 1000.0)      # claim 4 (automata): plateau ratio, largest / smallest S
    flat_from: int = number(1, 1_000_000)          # claim 5 (automata): flatness from this S on
    flat_ratio: float = number(1.0, 1000.0)        # claim 5 (automata): flat = biased ratio below this
    min_speedup: float = number(1.0, 1000.0)       # claim 8: "about ten times faster" = at least this
    few_heads: int = number(1, 1_000_000)          # claim 3: "a few heads" = the top this many
    most_of_gap: float = number(0.0, 1.0)          # claim 3: "most of the gap" = at least this fraction
    metric_factor: float = number(1.0, 1000.0)     # mirage: a continuous metric's rise at most this much wider
    random_ratio: float = number(0.0, 1000.0)      # mirage: across-seed spread over within-run width above this
    resolution_widths: float = number(0.0, 1000.0)  # mirage: a small test set moves emergence at most this many rise widths
    stability_draws: int = number(0, 100_000)      # seed resamples each verdict is re-decided on (0: none)
    stability_resamples: int = number(100, 1_000_000)  # bootstraps and permutations inside each of those
    sensitivity_factor: float = number(1.0, 10.0)  # thresholds moved by this factor both ways (1: not)


class ReadThresholds:
    """`ClaimsArgs` that note which of their fields the rules read (`read`)."""

    def __init__(self, claims: ClaimsArgs):
        object.__setattr__(self, "_claims", claims)
        object.__setattr__(self, "read", set())

    def __getattr__(self, name: str):
        value = getattr(self._claims, name)
        self.read.add(name)
        return value
