"""The scorecard's adapters from result datasets to the rules' arms, on hand-built results."""
import copy
import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest
import xarray as xr

from emergence.claims import scorecard as sc
from emergence.claims.thresholds import ClaimsArgs
from emergence.common.schema import load
from emergence.pipeline.config import load_params

PAPER = sc.read_paper_claims(sc.Path(__file__).resolve().parent.parent / "data" / "paper" / "claims.yaml")


def thresholds(**moved) -> ClaimsArgs:
    """The smoke profile's thresholds, with `moved`."""
    return replace(load(ClaimsArgs, load_params(profile="smoke")["claims"], "claims"), **moved)


def context():
    return sc.Context(thresholds(n_boot=200, n_perm=200), PAPER)


def summary(cells, n_seed=4, budget=1000):
    """A sweep summary: cells = [(S, s, solved step or None, plateau end or None)], every seed alike
    up to a small spread."""
    n = len(cells)
    spread = np.linspace(0.9, 1.1, n_seed)
    data = {}
    for what, pos in (("solved", 2), ("plateau_end", 3), ("emergence", 2)):
        t = np.array([[c[pos] * f if c[pos] else budget for f in spread] for c in cells], float)
        data[f"{what}_step"] = (("cell", "seed"), t)
        data[f"{what}_censored"] = (("cell", "seed"), np.array([[c[pos] is None] * n_seed for c in cells], np.int8))
    data["state_size"] = (("cell",), np.array([c[0] for c in cells]))
    data["sparsity"] = (("cell",), np.array([c[1] for c in cells]))
    data["budget_step"] = (("cell",), np.full(n, budget))
    return xr.Dataset(data)


def by_id(rows):
    return {key: v for key, v in rows}


def test_sparsity_rules_read_the_hump_and_skip_the_dense_regime():
    # S = 16: both ends solve, the middle does not; S = 32: same; at s = 16 S = 16 is dense (copy)
    cells = [(16, 1, 100, 50), (16, 8, None, None), (16, 16, 150, 60), (32, 1, 300, 80), (32, 16, None, None),
             (32, 32, 200, 70)]
    rows = by_id(sc.sparsity_claims(summary(cells), context()))
    assert rows["sparsity-hump"].verdict == "reproduced", rows["sparsity-hump"].reason
    length = rows["sparsity-length"]
    assert "s = 1" in length.reason and "s = 16" not in length.reason  # S = 16, s = 16 is dense: no stratum
    assert rows["sparsity-large-s"].verdict == "needs the paper profile"  # censored at 1000 < 10^4


def test_a_falling_difficulty_is_not_a_hump():
    cells = [(16, 1, None, None), (16, 8, 600, 300), (16, 16, 100, 50)]
    assert by_id(sc.sparsity_claims(summary(cells), context()))["sparsity-hump"].verdict == "not reproduced"


def test_unit_jump_ratios_by_hand():
    ds = xr.Dataset({
        "unit_plateau_end_step": (("seed", "bit"), [[100.0, 200.0, 1000.0]]),
        "unit_emergence_step": (("seed", "bit"), [[150.0, 400.0, 1000.0]]),
        "unit_solved_step": (("seed", "bit"), [[200.0, 1000.0, 1000.0]]),
        "unit_plateau_end_censored": (("seed", "bit"), [[0, 0, 1]]),
        "unit_emergence_censored": (("seed", "bit"), [[0, 0, 1]]),
        "unit_solved_censored": (("seed", "bit"), [[0, 1, 1]]),
    }, attrs={"budget_step": 1000})
    ratio, censored = sc.unit_jump_ratios(ds)
    assert ratio[0, 0] == pytest.approx(100 / 150) and not censored[0, 0]
    assert ratio[0, 1] == pytest.approx(800 / 400) and censored[0, 1]  # never solved: a lower bound
    assert math.isnan(ratio[0, 2])                                     # never left the plateau


def test_lm_jump_is_measured_from_the_runs_own_plateau():
    steps = np.array([0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000])
    # IOI-like: an either-name stage at 0.5 from step 8, then the jump between 256 and 512
    ioi = np.array([0.0, 0.0, 0.1, 0.3, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.95, 1.0])
    r, censored, floor = sc.lm_jump_ratio(steps, ioi, 512, False)
    assert r == pytest.approx((512 - 256) / 512) and not censored and floor == pytest.approx(0.5)
    rising = np.array([0, 0, 0, 0, 0, 0, 0, 0, 0.05, 0.3, 0.6, 0.8])
    r, censored, _ = sc.lm_jump_ratio(steps, rising, 1000, True)
    assert censored and r == pytest.approx((1000 - 128) / 1000)
    flat = np.zeros(len(steps))
    assert math.isnan(sc.lm_jump_ratio(steps, flat, 1000, True)[0])


def test_each_capability_is_its_own_part_of_the_abruptness_claim():
    rng = np.random.default_rng(0)
    runs = 15
    abrupt_cap = np.stack([rng.uniform(0.02, 0.12, runs), np.zeros(runs), np.full(runs, 0.02)], -1)
    slow_cap = np.stack([rng.uniform(0.35, 0.7, runs), np.zeros(runs), np.full(runs, 0.02)], -1)
    ctx = context()
    both = sc.capability_abruptness(np.stack([abrupt_cap, slow_cap], 1), ["spans", "patterns"], ctx)
    # pooled, the two would meet near the threshold; as parts one holds and one fails
    assert both.verdict == "partly" and "spans: reproduced" in both.reason and "patterns: not reproduced" in both.reason
    assert sc.capability_abruptness(np.stack([abrupt_cap, abrupt_cap], 1), ["a", "b"], ctx).verdict == "reproduced"
    # a capability no run of which jumped decides nothing, but stays a part of the claim: one
    # slow capability beside three undecided ones is no majority
    none = np.stack([np.full(runs, np.nan), np.zeros(runs), np.full(runs, 0.02)], -1)
    assert sc.capability_abruptness(np.stack([slow_cap, none, none, none], 1), list("abcd"),
                                    ctx).verdict == "inconclusive"
    assert sc.capability_abruptness(np.stack([slow_cap, slow_cap, slow_cap, none], 1), list("abcd"),
                                    ctx).verdict == "not reproduced"


def test_scorecard_json_is_plain_and_stable():
    rows = [{"id": "x", "estimate": math.inf, "interval": [0.1234567891, math.nan], "verdict": "inconclusive",
             "n": np.int64(3)}]
    text = sc.scorecard_json(rows, thresholds(alpha=0.1))
    data = json.loads(text)
    assert data["claims"][0]["estimate"] == "inf" and data["claims"][0]["interval"] == [0.123457, None]
    assert data["tally"]["inconclusive"] == 1 and sum(data["tally"].values()) == 1
    assert sc.scorecard_json(rows, thresholds(alpha=0.1)) == text


def test_the_metric_keys_every_row_once():
    rows = [{"id": "bias", "claim": f"5 (c = {c})", "verdict": "reproduced", "estimate": 1.0, "interval": [0, 2],
             "n": 4, "n_of": "runs", "censored": 0, "censored_of": None, "p_value": 0.01, "q_value": 0.02,
             "stability": 0.9} for c in (1, 3)]
    rows.append(dict(rows[0], id="hump", claim="4"))
    claims = json.loads(sc.verdicts_json(rows))["claims"]
    assert list(claims) == ["bias 5 (c = 1)", "bias 5 (c = 3)", "hump"]
    assert set(claims["hump"]) == {"verdict", "estimate", "interval", "n", "n_of", "censored", "censored_of",
                                   "p_value", "q_value", "stability"}


def test_stability_is_told_with_the_verdicts_the_resamples_gave_instead():
    shaky = {"claim": "1", "verdict": "not reproduced", "stability": 0.74,
             "resampled": {"inconclusive": 26, "not reproduced": 74}}
    firm = {"claim": "4", "verdict": "reproduced", "stability": 1.0, "resampled": {"reproduced": 100}}
    unsampled = {"claim": "5", "verdict": "reproduced", "stability": None, "resampled": {}}
    assert sc.stability_text(shaky) == ("the same verdict on 74% of 100 resamples of the seeds "
                                        "(else: inconclusive in 26)")
    assert sc.stability_text(firm) == "the same verdict on 100% of 100 resamples of the seeds"
    assert sc.stability_text(unsampled) == "not resampled"
    shakier = dict(shaky, claim="2", stability=0.5)
    assert [r["claim"] for r in sc.least_stable([firm, unsampled, shaky, shakier], top=5)] == ["2", "1"]
    assert sc.least_stable([firm, shaky, shakier], top=1) == [shakier]
    assert sc.least_stable([firm, unsampled]) == []


def test_rows_match_across_revisions_by_rule_not_by_label():
    """A relabelled row is the same claim in both revisions (the entry page's and `make compare`'s
    verdict changes); rows sharing a rule stay apart by their labels."""
    from emergence.report.compare import verdict_diff

    base = [{"id": "abrupt", "claim": "1 (linear map)", "verdict": "reproduced"},
            {"id": "bias", "claim": "5 (c = 1)", "verdict": "reproduced"},
            {"id": "bias", "claim": "5 (c = 3)", "verdict": "partly"}]
    head = [dict(base[0], claim="1 (linear map, abrupt)"), base[1], dict(base[2], verdict="reproduced")]
    assert list(sc.rows_by_key(head)) == ["abrupt", "bias 5 (c = 1)", "bias 5 (c = 3)"]
    diff = verdict_diff({"scorecard": {"claims": base}}, {"scorecard": {"claims": head}})
    assert diff.values.tolist() == [["5 (c = 3)", "partly", "reproduced"]]
    gone = verdict_diff({"scorecard": {"claims": base}}, {"scorecard": {"claims": base[1:]}})
    assert gone.values.tolist() == [["1 (linear map)", "reproduced", "(not tested)"]]
    # a scorecard that resampled its seeds shows how firmly each side held its verdict
    firm = [dict(r, stability=1.0) for r in base]
    shaky = [dict(r, stability=0.4) for r in head]
    diff = verdict_diff({"scorecard": {"claims": firm}}, {"scorecard": {"claims": shaky}})
    assert diff.values.tolist() == [["5 (c = 3)", "partly (stable 100%)", "reproduced (stable 40%)"]]
    assert verdict_diff({"scorecard": {"claims": firm}}, {"scorecard": {"claims": firm}}).empty


def test_a_claim_decided_alike_on_other_numbers_shows_both_sides_numbers():
    """`make compare` after an edit that moved a claim's numbers but not its verdict (a threshold,
    more seeds): both sides' estimate, interval, sample and test; a verdict change is not repeated
    here, an unchanged row not listed, and an edited rule names its statistic on both sides."""
    from emergence.report.compare import number_diff

    row = {"id": "random-times", "claim": "1 (linear map, seed-dependent)", "verdict": "reproduced",
           "statistic": "quartile ratio", "estimate": 2.04, "interval": [1.71, 3.89], "n": 8, "n_of": "seeds",
           "censored": 0, "censored_of": None, "p_value": None, "q_value": None}
    tested = dict(row, id="hump", claim="4 (linear map, sparsity)", estimate="inf", interval=["inf", "inf"],
                  n=40, n_of="runs", censored=21, p_value=0.00336, q_value=0.00533)
    moved = [dict(row, estimate=2.2, interval=[1.8, 4.1]), dict(tested, censored=19, p_value=0.004, q_value=0.006)]
    diff = number_diff({"scorecard": {"claims": [row, tested]}}, {"scorecard": {"claims": moved}})
    assert diff.values.tolist() == [
        ["4 (linear map, sparsity)", "reproduced", "∞ [∞, ∞]; 40 runs, 21 censored; p = 0.00336 (BH q = 0.00533)",
         "∞ [∞, ∞]; 40 runs, 19 censored; p = 0.004 (BH q = 0.006)"],
        ["1 (linear map, seed-dependent)", "reproduced", "2.04 [1.71, 3.89]; 8 seeds, 0 censored",
         "2.2 [1.8, 4.1]; 8 seeds, 0 censored"]]
    assert number_diff({"scorecard": {"claims": [row]}}, {"scorecard": {"claims": [row]}}).empty
    decided = dict(row, estimate=1.2, interval=[1.0, 1.4], verdict="not reproduced")  # the verdicts' table has it
    assert number_diff({"scorecard": {"claims": [row]}}, {"scorecard": {"claims": [decided]}}).empty
    rule = dict(row, statistic="quartile ratio (Kaplan-Meier)")
    assert number_diff({"scorecard": {"claims": [row]}}, {"scorecard": {"claims": [rule]}}).values.tolist() == [
        ["1 (linear map, seed-dependent)", "reproduced", "quartile ratio = 2.04 [1.71, 3.89]; 8 seeds, 0 censored",
         "quartile ratio (Kaplan-Meier) = 2.04 [1.71, 3.89]; 8 seeds, 0 censored"]]


def test_every_row_links_a_figure_its_chapter_draws():
    import re

    from emergence.claims.scorecard import FIGURES
    from emergence.common.experiments import experiments
    from emergence.pipeline.config import REPO_ROOT

    labels = {p.stem: set(re.findall(r"^#\| label: (fig-[\w-]+)", p.read_text(), flags=re.M))
              for p in (REPO_ROOT / "report" / "chapters").glob("*.py")}
    for declared in experiments():
        assert declared.figure in labels[declared.chapter], (declared.name, declared.figure)
    by_chapter = {"lm-": "06_language_models", "linear-map-": "01_linear_map", "mirage-": "09_mirage"}
    for key, figure in FIGURES.items():
        chapter = next(c for prefix, c in by_chapter.items() if key.startswith(prefix))
        assert figure in labels[chapter], (key, figure)


@pytest.mark.parametrize("profile", ["default", "paper"])  # smoke checks the wiring, at 2 seeds
def test_every_final_loss_comparison_can_reach_its_level(profile):
    """The final-loss rules (claims 6, 7, 8) test at alpha / 2 by an exact permutation over
    seeds; with n seeds an arm the smallest p is 1 / C(2n, n), so n must let it fall below."""
    p = load_params(profile=profile)
    half = p["claims"]["alpha"] / 2
    sweeps = p["sweeps"]
    for name, n in [("sweeps.architecture", sweeps["architecture"]["n_seeds"]),
                    ("sweeps.ca_architecture", sweeps["ca_architecture"]["n_seeds"]),
                    ("sweeps.mixers.linear_map", sweeps["mixers"]["linear_map"]["n_seeds"]),
                    ("sweeps.mixers.cellular_automata", sweeps["mixers"]["cellular_automata"]["n_seeds"])]:
        assert 1 / math.comb(2 * n, n) < half, f"{profile}: {name}.n_seeds = {n} cannot reach p < {half:g}"


def test_the_paper_profiles_unit_counts_come_from_its_own_overlay():
    """claims_scorecard depends on profiles/paper.yaml for these counts, so the overlay must set
    every one of them itself (a value merged in from params.yaml would change unseen)."""
    import yaml
    overlay = yaml.safe_load((sc.Path(__file__).resolve().parent.parent / "profiles" / "paper.yaml").read_text())
    merged = load_params(profile="paper")
    assert set(sc.UNITS_ON_PROFILE) <= set(PAPER)
    for key in sc.UNITS_ON_PROFILE:
        assert sc.units_on_profile(key, overlay) == sc.units_on_profile(key, merged) > 0, key
    # and the mixer settings the scorecard checks the paper's setting against
    for task in ("linear_map", "cellular_automata"):
        assert sc.mixer_profile_setting(overlay, task) == sc.mixer_profile_setting(merged, task), task
    default = load_params(profile="default")
    # the language models' abruptness counts (size, seed) runs
    assert sc.units_on_profile("lm-abrupt", default) == (default["language_model"]["train"]["n_seeds"]
                                                          * len(default["language_model"]["sizes"]))


def test_the_context_reads_the_paper_profiles_count_per_claim():
    claims, paper = context().c, load_params(profile="paper")
    ctx = sc.Context(claims, PAPER, paper)
    assert ctx.paper_n("linear-map-random-times") == paper["linear_map"]["train"]["n_seeds"]
    assert ctx.paper_n("mixer-automata") == paper["sweeps"]["mixers"]["cellular_automata"]["n_seeds"]
    assert ctx.paper_n("recurrent-mixers") == min(paper["sweeps"]["mixers"][t]["n_seeds"]
                                                  for t in ("linear_map", "cellular_automata"))
    lm = paper["language_model"]
    assert ctx.paper_n("lm-patching") == lm["train"]["n_seeds"] * len(lm["sizes"])  # (size, seed) runs
    assert ctx.paper_n("mirage-resolution-linear-map") == paper["linear_map"]["train"]["n_seeds"]
    assert ctx.paper_n("mirage-metric-automata") == paper["sweeps"]["ca_state_size"]["n_seeds"]
    assert ctx.paper_n("mirage-resolution-lm") == lm["train"]["n_seeds"]  # sizes are runs within a seed
    assert ctx.paper_n("linear-map-entropy") is None          # its rule forecasts no seed count
    # an architecture's own seed count: the arms compared count at the fewer of theirs
    own = copy.deepcopy(paper)
    own["sweeps"]["mixers"]["architectures"]["static_mixing"]["n_seeds"] = {"cellular_automata": 200}
    own["sweeps"]["mixers"]["architectures"]["token_mlp"]["n_seeds"] = {"cellular_automata": 300}
    own["sweeps"]["mixers"]["architectures"]["transformer"]["n_seeds"] = {"cellular_automata": 100}
    assert sc.Context(claims, PAPER, own).paper_n("mixer-automata") == 100
    own["sweeps"]["mixers"]["architectures"]["transformer"]["n_seeds"] = None   # unset: the setting's
    assert sc.Context(claims, PAPER, own).paper_n("mixer-automata") == paper["sweeps"]["mixers"]["cellular_automata"]["n_seeds"]
    assert sc.Context(claims, PAPER, own).paper_n("mixer-faster") == paper["sweeps"]["mixers"]["linear_map"]["n_seeds"]
    assert sc.Context(claims, PAPER).paper_n("linear-map-random-times") is None


def test_compare_names_a_revision_that_is_no_commit(capsys):
    from emergence.report.compare import main

    with pytest.raises(SystemExit) as stop:
        main(["no-such-revision"])
    assert stop.value.code == 2 and "'no-such-revision' names no commit" in capsys.readouterr().err


def abrupt_rule(ds, ctx):
    """A one-rule section for the sensitivity test: claim 1's abruptness on `ds.ratio`."""
    r = ds["ratio"].values
    return [("toy", sc.vd.jumps_are_abrupt(r, np.zeros(r.shape, bool), claim="toy", statement="",
                                            max_ratio=ctx.c.abrupt_ratio, alpha=ctx.c.alpha,
                                            n_boot=ctx.c.n_boot))]


def test_moving_a_threshold_lists_the_verdicts_that_hinge_on_it(monkeypatch):
    """Every jump takes ~0.28 of its emergence step: not abrupt at 0.25, abrupt at 0.25 x 1.25;
    a threshold the rule does not read changes nothing; a fraction is not moved past 1."""
    monkeypatch.setattr(sc, "rule_sections", lambda: (("toy", abrupt_rule, ("x",)),))
    results = {"x": xr.Dataset({"ratio": (("seed", "unit"), np.linspace(0.27, 0.29, 12).reshape(6, 2))})}
    claims = replace(context().c, abrupt_ratio=0.25, most_of_gap=0.9, sensitivity_factor=1.25)
    rows = [{"id": key, "claim": v.claim, "verdict": v.verdict}
            for _, key, v in sc.rule_verdicts(results, sc.Context(claims, PAPER))]
    assert [r["verdict"] for r in rows] == ["not reproduced"]
    moved = {e["threshold"]: e for e in sc.threshold_sensitivity(rows, results, claims, PAPER)}
    assert set(moved) == set(sc.THRESHOLDS)
    assert moved["abrupt_ratio"]["higher"] == {"value": 0.3125, "changed": [
        {"row": "toy", "claim": "toy", "from": "not reproduced", "to": "reproduced"}]}
    assert moved["abrupt_ratio"]["lower"]["changed"] == [] and moved["growth_ratio"]["higher"]["changed"] == []
    assert moved["most_of_gap"]["higher"] is None and moved["most_of_gap"]["lower"]["value"] == pytest.approx(0.72)
    assert sc.threshold_sensitivity(rows, results, replace(claims, sensitivity_factor=1.0), PAPER) == []


def test_a_threshold_moves_only_the_sections_that_read_it_and_gives_what_deciding_everything_gives(monkeypatch):
    calls = []

    def growth_rule(ds, ctx):  # reads growth_ratio (and alpha) only
        calls.append(ctx.c.growth_ratio)
        ratio = float(ds["ratio"].values.mean()) * 10
        return [("growth", replace(sc.vd.jumps_are_abrupt(np.array([[0.1]]), np.zeros((1, 1), bool), claim="growth",
                                                          statement="", max_ratio=1, alpha=ctx.c.alpha, n_boot=10),
                                   verdict="reproduced" if ratio >= ctx.c.growth_ratio else "not reproduced"))]

    monkeypatch.setattr(sc, "rule_sections", lambda: (("toy", abrupt_rule, ("x",)), ("grow", growth_rule, ("x",))))
    results = {"x": xr.Dataset({"ratio": (("seed", "unit"), np.linspace(0.19, 0.21, 12).reshape(6, 2))})}
    claims = replace(context().c, abrupt_ratio=0.25, growth_ratio=1.8, sensitivity_factor=1.25)
    base = sc.rule_verdicts(results, sc.Context(claims, PAPER))
    rows = [{"id": key, "claim": v.claim, "verdict": v.verdict} for _, key, v in base]
    calls.clear()
    moved = sc.threshold_sensitivity(rows, results, claims, PAPER)
    # the growth section: once to see what it reads, then for alpha's and growth_ratio's moves only
    assert sorted(calls) == pytest.approx(sorted([1.8, 1.8, 1.8, 1.8 / 1.25, 1.8 * 1.25]))
    for entry in moved:
        for side, m in (("lower", 1 / 1.25), ("higher", 1.25)):
            if entry[side] is None:
                continue
            everything = sc.keyed_verdicts(results, sc.Context(replace(claims, **{entry["threshold"]: entry["value"] * m}),
                                                               PAPER))
            expected = [{"row": k, "claim": k, "from": r["verdict"], "to": everything[k]}
                        for k, r in zip(("toy", "growth"), rows) if everything[k] != r["verdict"]]
            assert entry[side]["changed"] == expected, (entry["threshold"], side)
    assert {e["threshold"] for e in moved if any(e[s] and e[s]["changed"] for s in ("lower", "higher"))} == {
        "abrupt_ratio", "growth_ratio"}
    # handed the base decisions it would make, it decides no rule at the base thresholds again
    decided = sc.thresholds_read(results, claims, PAPER, None)
    calls.clear()
    assert sc.threshold_sensitivity(rows, results, claims, PAPER, decided=decided) == moved
    assert sorted(calls) == pytest.approx(sorted([1.8, 1.8, 1.8 / 1.25, 1.8 * 1.25]))


def test_a_claim_says_which_threshold_moves_its_verdict():
    change = {"row": "lm-abrupt", "claim": "1 (lm)", "from": "not reproduced", "to": "reproduced"}
    sensitivity = [{"threshold": "abrupt_ratio", "value": 0.25, "lower": {"value": 0.2, "changed": []},
                    "higher": {"value": 0.3125, "changed": [change]}},
                   {"threshold": "most_of_gap", "value": 0.9, "lower": {"value": 0.72, "changed": []}, "higher": None}]
    assert sc.hinges_text("lm-abrupt", sensitivity) == "`abrupt_ratio` 0.25 → 0.312 gives reproduced"
    assert sc.hinges_text("sparsity-hump", sensitivity) == "no threshold moved both ways changes this verdict"
    assert sc.hinges_text("lm-abrupt", []) == ""


def test_settings_with_fewer_seeds_sit_beside_the_others_with_absent_rows():
    from emergence.claims.scorecard import _by_seed

    out = _by_seed([np.ones((4, 2)), np.zeros((12, 3)), np.full(12, 5.0)[:, None]])
    assert out.shape == (12, 6)
    assert np.isnan(out[4:, :2]).all() and (out[:4, :2] == 1).all() and (out[:, 2:5] == 0).all()


def test_mixer_comparisons_name_each_arm_beside_its_median():
    # the Mixer emerges at ~800 steps, the transformer at ~400: "Mixer faster" is refuted, and the
    # reason names which median is whose (the ratio reads transformer over static_mixing)
    cells = [("linear_map", "S16_s02", "transformer", "attention", 400), ("linear_map", "S16_s02", "static_mixing",
             "static_mixing", 800), ("cellular_automata", "S008", "transformer", "attention", 300),
             ("cellular_automata", "S008", "static_mixing", "static_mixing", 600)]
    sm = summary([(16, 2, c[4], c[4] // 2) for c in cells], n_seed=5, budget=3000)
    sm = sm.assign(task=("cell", [c[0] for c in cells]), setting=("cell", [c[1] for c in cells]),
                   architecture=("cell", [c[2] for c in cells]), mixer=("cell", [c[3] for c in cells]),
                   final_output_loss=(("cell", "seed"), np.array([[0.3 if c[3] == "attention" else 0.5] * 5
                                                                  for c in cells])))
    rows = by_id(sc.mixer_claims(sm, context()))
    faster = rows["mixer-faster"]
    assert faster.verdict == "not reproduced", faster.reason
    assert "linear map S16_s02, static_mixing vs transformer: 800 vs 400" in faster.reason
    assert "cellular automata S008, transformer vs static_mixing: 300 vs 600" in rows["mixer-automata"].reason


def test_the_bias_comparison_names_its_control():
    cells = summary([(16, 3, None, None), (16, 3, None, 60)], n_seed=5)
    cells = cells.assign(strength=("cell", [0.0, 3.0]))
    (key, v), = sc.attention_bias_claims(cells, context())
    assert key == "linear-map-bias" and v.verdict == "reproduced", v.reason
    assert "KM medians c = 3 vs control: 60 vs not reached" in v.reason


def test_every_row_says_whose_claim_it_tests_and_the_tallies_count_them_apart():
    assert {row["kind"] for row in PAPER.values()} <= set(sc.KINDS)
    # the mirage rows ask this report's question, the random-token twin is a control the paper
    # does not report; every other row is a claim of the paper
    assert all(PAPER[k]["kind"] == "extension" for k in PAPER if k.startswith("mirage-"))
    assert PAPER["lm-pretraining-control"]["kind"] == "control"
    assert PAPER["mixer-faster"]["kind"] == PAPER["lm-patching"]["kind"] == "paper"
    rows = [{"id": "a", "kind": "paper", "verdict": "reproduced"}, {"id": "b", "kind": "extension", "verdict":
            "not reproduced"}, {"id": "c", "kind": "control", "verdict": "not reproduced"}, {"id": "d", "verdict":
            "inconclusive"}]   # a row from before `kind` tests a claim of the paper
    both = sc.tallies(rows)
    assert both["tally"] == dict.fromkeys(sc.vd.VERDICTS, 0) | {"reproduced": 1, "inconclusive": 1}
    assert both["extensions_tally"]["not reproduced"] == 2 and sum(both["extensions_tally"].values()) == 2
    assert json.loads(sc.verdicts_json([dict(r, **dict.fromkeys(
        ("estimate", "interval", "n", "n_of", "censored", "censored_of", "p_value", "q_value", "stability")))
        for r in rows]))["extensions_tally"]["not reproduced"] == 2


@pytest.mark.parametrize("edit, message", [
    (lambda row: row.update(kind="ours"), "mirage-random-automata.kind: one of ['paper', 'extension', 'control']"),
    (lambda row: row.pop("kind"), "mirage-random-automata: fields"),
    (lambda row: row.update(source="blog"), "unknown ['source']"),
    (lambda row: row.update(setting={"sparsity": 3}), "mirage-random-automata.setting: parameter -> a non-empty list"),
])
def test_a_claims_file_with_a_bad_row_stops_naming_it(tmp_path, edit, message):
    import yaml
    rows = copy.deepcopy(PAPER)
    edit(rows["mirage-random-automata"])
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(rows))
    with pytest.raises(ValueError, match=re.escape(message)):
        sc.read_paper_claims(path)


def test_the_sharpening_head_is_ranked_on_one_half_of_the_prompts_and_measured_on_the_other():
    dims = ("capability", "seed", "layer", "head")

    def patched(**arrays):
        return xr.Dataset({k: (dims, np.asarray(v, float).reshape(1, 1, 1, 3)) for k, v in arrays.items()})

    # on all prompts head 0 has the largest effect and sharpened most; on the ranking half head 2
    # leads, and on the held-out half head 2 sharpened by 1 nat more than the others' median
    ds = patched(delta_p=[0.3, 0.1, 0.2], entropy_old=[2, 2, 2], entropy_new=[0, 2, 2],
                 ranking_delta_p=[0.1, 0.1, 0.4], held_out_entropy_old=[2, 2, 2], held_out_entropy_new=[2, 1.5, 0.5])
    assert sc.top_head_sharpening(ds, 0, 0) == pytest.approx(-1.25)
    # a result from before the split: ranked and measured on every prompt, as it was
    old = ds.drop_vars(["ranking_delta_p", "held_out_entropy_old", "held_out_entropy_new"])
    assert sc.top_head_sharpening(old, 0, 0) == pytest.approx(-2.0)


def mixer_summary(setting: str, task_config: dict | None, mixer_step: float, transformer_step: float, n_seed=8,
                  arms: dict | None = None):
    """A mixer-comparison summary of one linear-map setting: the Mixer and the transformer
    emerging at about the given steps (budget 3000); `arms`, architecture -> (mixer, step, final
    loss), replaces the two (a step past the budget: censored there)."""
    arms = arms or {"static_mixing": ("static_mixing", mixer_step, 0.0),
                    "transformer": ("attention", transformer_step, 0.0)}
    spread = np.linspace(0.9, 1.1, n_seed)
    data = {}
    steps = np.array([np.minimum(a[1] * spread, 3000.0) for a in arms.values()])
    censored = np.array([(a[1] * spread >= 3000.0) for a in arms.values()]).astype(np.int8)
    for what in ("emergence", "solved", "plateau_end"):
        data[f"{what}_step"] = (("cell", "seed"), steps)
        data[f"{what}_censored"] = (("cell", "seed"), censored)
    data.update({"task": (("cell",), np.array(["linear_map"] * len(arms))),
                 "setting": (("cell",), np.array([setting] * len(arms))),
                 "architecture": (("cell",), np.array(list(arms))),
                 "mixer": (("cell",), np.array([a[0] for a in arms.values()])),
                 "budget_step": (("cell",), np.full(len(arms), 3000)),
                 "final_output_loss": (("cell", "seed"), np.array([a[2] + 0.01 * spread for a in arms.values()]))})
    if task_config is not None:
        data["task_config"] = (("cell",), np.array([json.dumps(task_config)] * len(arms)))
    return xr.Dataset(data)


def test_the_token_mixing_mlp_decides_the_mixer_and_the_linear_reading_is_reported_beside_it():
    ctx = sc.Context(thresholds(n_boot=200, n_perm=400), PAPER,
                     load_params(profile="paper"))
    at_three = {"state_size": 16, "sparsity": 3}
    arms = {"transformer": ("attention", 5000, 0.35), "static_mixing": ("static_mixing", 5000, 0.69),
            "token_mlp": ("token_mlp", 300, 0.34), "unmasked_mixing": ("unmasked_mixing", 20, 0.0)}
    rows = by_id(sc.mixer_claims(mixer_summary("S16_s03", at_three, 0, 0, arms=arms), ctx))
    faster = rows["mixer-faster"]
    assert faster.verdict == "reproduced" and faster.claim == "8 (Mixer, linear map)", faster.reason
    assert faster.reason.startswith("token_mlp: KM medians linear map S16_s03, token_mlp vs transformer")
    assert "; beside it, static_mixing (reported, not deciding): needs the paper profile (" in faster.reason
    # the linear reading faster, the MLP not: the MLP decides
    swapped = dict(arms, transformer=("attention", 800, 0.35), static_mixing=("static_mixing", 100, 0.34),
                   token_mlp=("token_mlp", 1600, 0.35))
    row = by_id(sc.mixer_claims(mixer_summary("S16_s03", at_three, 0, 0, arms=swapped), ctx))["mixer-faster"]
    assert row.verdict == "not reproduced" and "static_mixing (reported, not deciding): reproduced" in row.reason
    # without the MLP's arm (an older run) the linear reading decides
    only_static = {k: v for k, v in swapped.items() if k != "token_mlp"}
    assert by_id(sc.mixer_claims(mixer_summary("S16_s03", at_three, 0, 0, arms=only_static), ctx)
                 )["mixer-faster"].verdict == "reproduced"
    # the control: the unmasked matrix 'emerges' at once, far before the masked one
    control = rows["mixer-unmasked-control"]
    assert control.verdict == "reproduced" and "unmasked_mixing" in control.reason
    no_control = {k: v for k, v in arms.items() if k != "unmasked_mixing"}
    assert "mixer-unmasked-control" not in by_id(sc.mixer_claims(mixer_summary("S16_s03", at_three, 0, 0,
                                                                               arms=no_control), ctx))


def test_only_the_mixer_far_below_chance_is_read_in_the_final_loss_at_the_sparser_settings():
    ctx = sc.Context(thresholds(n_boot=200, n_perm=400), PAPER,
                     load_params(profile="paper"))
    arms = {"transformer": ("attention", 5000, 0.59), "static_mixing": ("static_mixing", 5000, 0.60),
            "token_mlp": ("token_mlp", 5000, 0.40)}  # 4 seeds an arm
    lm = mixer_summary("S16_s03", {"state_size": 16, "sparsity": 3}, 0, 0, arms=arms)
    seven = mixer_summary("S16_s07", {"state_size": 16, "sparsity": 7}, 0, 0, arms=arms)
    both = xr.concat([lm, seven], dim="cell")
    sparser = by_id(sc.mixer_claims(both, ctx))["mixer-sparser"]
    assert sparser.verdict == "reproduced", sparser.reason
    assert sparser.reason.startswith("token_mlp: ")
    worse = {**arms, "token_mlp": ("token_mlp", 5000, 0.62)}
    seven = mixer_summary("S16_s07", {"state_size": 16, "sparsity": 7}, 0, 0, arms=worse)
    assert by_id(sc.mixer_claims(xr.concat([lm, seven], dim="cell"), ctx))["mixer-sparser"].verdict \
        == "not reproduced"


def test_a_mixer_verdict_against_the_paper_needs_the_papers_sparsity():
    claims = thresholds(n_boot=200, n_perm=200)
    paper_profile = load_params(profile="paper")
    ctx = sc.Context(claims, PAPER, paper_profile)
    slower = {"state_size": 16, "sparsity": 2}
    rows = by_id(sc.mixer_claims(mixer_summary("S16_s02", slower, 1600, 800), ctx))
    # the Mixer twice as slow at s = 2, which the paper does not use: deferred to the paper profile (s = 3 5 7)
    assert rows["mixer-faster"].verdict == "needs the paper profile"
    assert "decided at sparsity = 2" in rows["mixer-faster"].reason
    # at the paper's s = 3 the same numbers refute it
    at_three = by_id(sc.mixer_claims(mixer_summary("S16_s03", dict(slower, sparsity=3), 1600, 800), ctx))
    assert at_three["mixer-faster"].verdict == "not reproduced"
    # a summary from before the cells said their setting is read as it was
    assert by_id(sc.mixer_claims(mixer_summary("S16_s02", None, 1600, 800), ctx))["mixer-faster"].verdict \
        == "not reproduced"
    # a profile whose mixer comparison never runs the paper's setting leaves it inconclusive
    paper_profile["sweeps"]["mixers"]["linear_map"]["sparsities"] = [2]
    assert by_id(sc.mixer_claims(mixer_summary("S16_s02", slower, 1600, 800), sc.Context(claims, PAPER, paper_profile))
                 )["mixer-faster"].verdict == "inconclusive"


def test_a_language_model_verdict_against_the_paper_needs_pythia():
    claims = context().c
    ctx = sc.Context(claims, PAPER, load_params(profile="paper"))
    refuted = sc.vd.Verdict(claim="1 (language models, seed-dependent)", statement="", paper="", statistic="s",
                            estimate=1.1, interval=(1.05, 1.2), n=10, censored=0, detectable="", verdict="not reproduced",
                            reason="spans: 1.08 [1.06, 1.21]")
    held = replace(refuted, verdict="reproduced", reason="digits: 3.1")
    rows = dict(sc.at_the_papers_model([("lm-random-times", refuted), ("lm-size", held),
                                        ("lm-pretraining", refuted)], ctx))
    # the paper states claim 1 of Pythia: ours is no verdict against it, and says whose models decided
    assert rows["lm-random-times"].verdict == "inconclusive"
    assert "model = this report's 2-layer language models" in rows["lm-random-times"].reason
    assert "where the paper states it at model = Pythia" in rows["lm-random-times"].reason
    assert "here: not reproduced; spans: 1.08" in rows["lm-random-times"].reason
    # a verdict for the paper stands, naming where it was decided
    assert rows["lm-size"].verdict == "reproduced" and "model = Pythia" in rows["lm-size"].reason
    # claim 9 names no model of the paper's: its verdict stands as decided
    assert rows["lm-pretraining"] == refuted
    # where the paper profile runs Pythia, the verdict waits for it
    pythia = load_params(profile="paper")
    pythia["pythia"]["enabled"] = True
    assert dict(sc.at_the_papers_model([("lm-random-times", refuted)], sc.Context(claims, PAPER, pythia))
                )["lm-random-times"].verdict == "needs the paper profile"


def lm_probes_of(times: dict, budget: int = 1000, rare: dict | None = None) -> xr.Dataset:
    """A probes table of first solved checkpoints: times[(model, capability)] = per-seed steps
    (None: never solved within `budget`)."""
    models = list(dict.fromkeys(m for m, _ in times))
    caps = list(dict.fromkeys(c for _, c in times))
    n = len(next(iter(times.values())))
    new = np.array([[[budget if t is None else t for t in times[(m, c)]] for c in caps] for m in models])
    cen = np.array([[[t is None for t in times[(m, c)]] for c in caps] for m in models], dtype=np.int8)
    main = {"digits": 1.0, "spans": 1.0, "patterns": 1.0, "ioi": 1.0, "noise": 1.0}
    config = {"corpus": {"mixture": main}, **({"rare_skills": {"mixture": rare}} if rare else {})}
    return xr.Dataset({"bracket_new_step": (("size", "capability", "seed"), new),
                       "bracket_censored": (("size", "capability", "seed"), cen)},
                      coords={"size": models, "capability": caps, "seed": np.arange(n),
                              "checkpoint_step": [0, budget]}, attrs={"config": json.dumps(config)})


def seed_dependence_of(probes: xr.Dataset) -> sc.Verdict:
    budget = float(probes["checkpoint_step"].values[-1])

    def times(size, cap):
        s = probes.sel(size=size, capability=cap)
        cen = s["bracket_censored"].values.astype(bool)
        return sc.Arm.of(np.where(cen, budget, s["bracket_new_step"].values.astype(float)), cen)
    caps = [str(c) for c in probes["capability"].values]
    return sc.seed_dependence(probes, times, sc.lv.sizes(probes["size"].values), caps, budget, None, context())


def test_seed_dependence_is_decided_on_the_rare_skills_twin_where_there_is_one():
    together = [300, 305, 310, 300, 305, 310, 300, 305, 310, 300, 305, 310]
    spread = [60, 90, 120, 180, 240, 300, 400, 500, 650, 800, 900, 980]
    rare = {"digits": 1.0, "spans": 0.1, "patterns": 0.1, "ioi": 1.0, "noise": 1.0}
    # the main corpus's seeds learn together; the rare twin's spread: reproduced, decided on the twin
    v = seed_dependence_of(lm_probes_of({("small", "digits"): together, ("small", "spans"): together,
                                         ("small@rare", "digits"): together, ("small@rare", "spans"): spread},
                                        rare=rare))
    assert v.verdict == "reproduced"
    assert "on the rare-skills corpus (spans 3.1% of its documents" in v.reason
    assert "small@rare spans: reproduced" in v.reason and "small@rare digits" not in v.reason
    assert "On the main corpus (spans 20.0%), beside it and deciding nothing: small digits: not reproduced" in v.reason
    # the twin's seeds together: not reproduced, whatever the main corpus shows
    v = seed_dependence_of(lm_probes_of({("small", "spans"): spread, ("small@rare", "spans"): together}, rare=rare))
    assert v.verdict == "not reproduced"
    # a twin that never learns the rare skill cannot decide
    v = seed_dependence_of(lm_probes_of({("small", "spans"): spread, ("small@rare", "spans"): [None] * 12},
                                        rare=rare))
    assert v.verdict == "inconclusive"
    # no twin (or a probes table from before the twin existed): decided on the main corpus, as before
    v = seed_dependence_of(lm_probes_of({("small", "digits"): together, ("small", "spans"): together}))
    assert v.verdict == "not reproduced" and "on the main corpus, no rare-skills twin trained" in v.reason


def test_a_rule_deciding_a_claim_without_a_statement_row_names_where_it_goes():
    with pytest.raises(KeyError, match=r"claims\.yaml.*emergence/experiments/"):
        sc.Context({}, {}).common("lr-sweep-earlier")
