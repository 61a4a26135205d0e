import re

import numpy as np
import pytest
import torch
import xarray as xr

from dataclasses import replace

from emergence.common.schema import ConfigError, load
from emergence.core.tasks import corpus as cp
from emergence.pipeline.config import load_params, validate
from emergence.runs import language_model as lm
from emergence.runs import lm_probes
from training_reference import reference_params


def training(params: dict) -> lm.LanguageModelTraining:
    """What training reads of the (test-edited) language_model section, typed."""
    return lm.LanguageModelTraining.of(params["language_model"])


def whole(params: dict) -> lm_probes.LanguageModelArgs:
    return load(lm_probes.LanguageModelArgs, params["language_model"], "language_model")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm")
    params = reference_params()  # the smoke profile with one tiny size and its Dyck twin
    ds = lm.train_size(training(params), "tiny", root / "models" / "tiny", root / "scratch")
    lm.train_size(training(params), "tiny", root / "models" / "tiny+dyck", root / "scratch", pretraining="dyck")
    return params, root, ds


def test_training_writes_results_and_pythia_like_checkpoints(trained):
    params, root, ds = trained
    steps = sorted(int(p.stem[4:]) for p in (root / "models" / "tiny" / "checkpoints").glob("step*.pt"))
    assert steps == [0, 1, 2, 4, 8, 16]
    assert ds["unit_accuracy"].dims == ("seed", "step", "position") and ds.attrs["size"] == "tiny"


def test_probes_and_brackets_agree_with_a_dense_scan(trained):
    params, root, _ = trained
    pr = lm_probes.probe_sizes(whole(params), root / "models")
    assert pr["probe_accuracy"].dims == ("size", "capability", "seed", "checkpoint_step")
    # each variant's pre-pretraining, read from what it was trained with
    assert pr["pretraining_steps"].sel(size="tiny").item() == 0
    assert pr["pretraining_transfer"].sel(size="tiny").item() == ""
    assert pr["pretraining_transfer"].sel(size="tiny+dyck").item() == params["language_model"]["pretraining"]["transfer"]
    assert pr["pretraining_steps"].sel(size="tiny+dyck").item() == params["language_model"]["pretraining"]["steps"]["dyck"] > 0
    # and its held-out corpus loss at every checkpoint, the trainer's own numbers
    tiny = xr.open_dataset(root / "models" / "tiny" / "train.nc")
    steps = pr["checkpoint_step"].values
    np.testing.assert_array_equal(pr["corpus_loss"].sel(size="tiny").transpose("seed", "checkpoint_step").values,
                                  tiny["loss"].sel(step=steps).values)
    acc = pr["probe_accuracy"].sel(size="tiny").values
    thr = pr.attrs["solved_accuracy"]
    steps = pr["checkpoint_step"].values
    for i in range(acc.shape[0]):
        for k in range(acc.shape[1]):
            solved = acc[i, k] >= thr
            if solved.all() or not solved.any() or np.all(np.diff(solved.astype(int)) >= 0):  # monotone runs
                first = int(np.argmax(solved)) if solved[-1] else None
                new = int(pr["bracket_new_step"].sel(size="tiny").values[i, k])
                assert new == (steps[first] if first is not None else -1)


def test_patching_a_forced_bracket(trained):
    params, root, _ = trained
    pr = lm_probes.probe_sizes(whole(params), root / "models")
    # pretend every capability emerged between checkpoints 8 and 16, so patching runs
    pr["bracket_old_step"][:] = 8
    pr["bracket_new_step"][:] = 16
    pr["bracket_censored"][:] = 0
    params["language_model"]["patching"].update(bracket="last_unsolved", min_gap=0.0)
    out = lm_probes.patch_size(whole(params), root / "models", "tiny", pr)
    assert out["delta_p"].dims == ("capability", "seed", "layer", "head")
    assert (out["old_step"].values == 8).all() and (out["new_step"].values == 16).all()
    rose = out["gap"].values >= 0.0           # every bracket measured; only rises are patched
    assert np.isfinite(out["gap"].values).all() and rose.any()
    assert np.isfinite(out["delta_p"].values[rose]).all() and np.isnan(out["delta_p"].values[~rose]).all()
    rec = out["top_k_recovery"].values
    assert rec.shape[-1] == 2 and np.isfinite(rec[rose]).all()
    assert ((out["previous_token_score"].values[rose] >= 0) & (out["previous_token_score"].values[rose] <= 1)).all()
    # beside the top heads: every head's pattern, every head's output, both fractions of one gap
    for name in ("all_heads_pattern_recovery", "all_heads_output_recovery"):
        assert out[name].dims == ("capability", "seed") and np.isfinite(out[name].values[rose]).all()
    # the sharpening's ranking and its measurement on the two halves of the prompts
    assert np.isfinite(out["ranking_delta_p"].values[rose]).all()
    assert not np.array_equal(out["held_out_entropy_new"].values[rose], out["entropy_new"].values[rose])
    params["language_model"]["patching"]["min_gap"] = 1.0   # no bracket rises by all of p
    assert np.isnan(lm_probes.patch_size(whole(params), root / "models", "tiny", pr)["delta_p"].values).all()


def test_patching_across_the_steepest_interval(trained):
    params, root, _ = trained
    pr = lm_probes.probe_sizes(whole(params), root / "models")
    steps = pr["checkpoint_step"].values.tolist()          # [0, 1, 2, 4, 8, 16]
    pr["bracket_new_step"][:] = 16
    pr["bracket_censored"][:] = 0
    rise = np.array([0.1, 0.1, 0.12, 0.5, 0.55, 0.9])      # steepest 2 -> 4, though 8 -> 16 is later
    pr["probe_p_correct"][:] = rise
    pr["bracket_new_step"].loc[dict(size="tiny")][0, 0] = 2  # solved at 2: only 0 -> 1 and 1 -> 2 count
    params["language_model"]["patching"].update(bracket="steepest", min_gap=0.0)
    old, new = lm_probes.steepest_brackets(pr.sel(size="tiny"))
    assert (old[0, 0], new[0, 0]) == (1, 2) and (old[1:] == 2).all() and (new[1:] == 4).all()
    out = lm_probes.patch_size(whole(params), root / "models", "tiny", pr)
    np.testing.assert_array_equal(out["old_step"].values, old)
    np.testing.assert_array_equal(out["new_step"].values, new)
    assert steps[:3] == [0, 1, 2]


def test_pre_pretraining_changes_the_starting_point(trained):
    params, root, _ = trained
    scratch_model = lm_probes.load_checkpoints(root / "models" / "tiny" / "checkpoints")[0]
    pre_model = lm_probes.load_checkpoints(root / "models" / "tiny+dyck" / "checkpoints")[0]
    # step 0 of the corpus phase = after Dyck: the body differs, the token layers start as from scratch
    assert not torch.equal(scratch_model.blocks[0].attn.qkv.weight, pre_model.blocks[0].attn.qkv.weight)
    assert torch.equal(scratch_model.wte, pre_model.wte)
    pr = lm_probes.probe_sizes(whole(params), root / "models")
    assert pr["size"].values.tolist() == ["tiny", "tiny+dyck"]


def test_previous_token_pattern():
    m = lm.previous_token_pattern(4)
    assert m.tolist() == [[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]


def test_pretraining_tasks_write_only_their_own_tokens():
    section = training(load_params(profile="smoke"))
    vocab = lm.vocab_of(section.corpus)
    first, n = vocab.id("s000"), section.corpus.synthetic_tokens
    for kind in lm.PRETRAINING_TASKS:
        x = lm.pretraining_task(section.corpus, section.pretraining, kind, 32, 8).eval_tokens
        assert x.min() >= first and x.max() < first + n, kind
    dyck = lm.pretraining_sequences(np.random.default_rng(0), section.pretraining, "dyck", 4, 32, n)
    assert dyck.max() < 2 * section.pretraining.dyck_k
    windows = replace(section, seq_len=64)
    corpus = lm.task_tensors(lm.build_task(windows, n_eval=16), windows)
    assert corpus.eval_tokens.max() < first  # no corpus document uses them
    assert corpus.sampler(8, torch.Generator().manual_seed(0)).max() < first


def test_a_twins_cache_key_holds_only_its_own_task():
    params = load_params(profile="smoke")
    section = params["language_model"]
    key = lm.training_key(training(params), "small", "dyck")
    section["pretraining"]["tasks"] = ["dyck"]
    section["pretraining"]["nca_states"] = 3       # another task's key
    assert lm.training_key(training(params), "small", "dyck") == key
    section["pretraining"]["dyck_k"] = 3
    assert lm.training_key(training(params), "small", "dyck") != key
    assert list(lm.variants(training(params))) == ["small", "medium", "large", "small+dyck", "small@rare"]


def test_the_rare_skills_twin_trains_on_its_own_mixture_only():
    params = load_params(profile="smoke")
    section = params["language_model"]
    main, rare = lm.training_key(training(params), "small", None), lm.training_key(training(params), "small", None, lm.RARE)
    assert main["corpus"] == section["corpus"] and main["name"] == "small"
    assert rare["corpus"] == {**section["corpus"], "mixture": section["rare_skills"]["mixture"]}
    assert rare["name"] == "small@rare" and rare != main
    section["rare_skills"]["mixture"] = dict(section["rare_skills"]["mixture"], spans=0.5)
    assert lm.training_key(training(params), "small", None) == main          # the main size keeps its cells
    assert lm.training_key(training(params), "small", None, lm.RARE) != rare
    with pytest.raises(ValueError, match="corpus"):
        lm.corpus_of(training(params), "other")
    # its windows follow its mixture; the main section is not edited
    section["rare_skills"]["mixture"] = {"digits": 0.0, "spans": 0.0, "patterns": 0.0, "ioi": 0.0, "noise": 1.0}
    typed = training(params)
    vocab = lm.vocab_of(typed.corpus)
    noise = {vocab.id("<eos>")} | {vocab.id(f"r{i:03d}") for i in range(typed.corpus.n_random)}
    drawn = {}
    for corpus in (None, lm.RARE):
        s = lm.on_corpus(typed, corpus)
        task = lm.task_tensors(lm.build_task(s, n_eval=8), s)
        drawn[corpus] = set(task.sampler(32, torch.Generator().manual_seed(0)).unique().tolist())
    assert drawn[lm.RARE] <= noise
    assert not drawn[None] <= noise                                 # digits, names ... on the main corpus
    assert typed.corpus.mixture.spans > 0


def test_the_rare_skills_sizes_are_validated():
    params = load_params(profile="smoke")
    params["language_model"]["rare_skills"]["sizes"] = ["huge"]
    with pytest.raises(ConfigError, match=r"language_model.rare_skills.sizes: names from"):
        validate(params)
    params = load_params(profile="smoke")
    params["language_model"]["rare_skills"]["mixture"] = {k: 0.0 for k in cp.KINDS}
    with pytest.raises(ConfigError, match=r"rare_skills.mixture: at least one weight"):
        validate(params)


def test_the_jump_bracket_starts_before_emergence():
    import xarray as xr
    steps = np.array([0, 1, 2, 4, 8, 16, 32])
    acc = np.array([[[0.0, 0.0, 0.02, 0.05, 0.5, 0.95, 1.0],     # jump 4 -> 16
                     [0.5, 0.5, 0.5, 0.52, 0.55, 0.8, 0.92],     # IOI-like plateau at 0.5: jump starts at 8
                     [0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.3]]])      # never solved
    ds = xr.Dataset({"probe_accuracy": (("capability", "seed", "checkpoint_step"), acc),
                     "bracket_new_step": (("capability", "seed"), np.array([[16, 32, -1]])),
                     "bracket_censored": (("capability", "seed"), np.array([[0, 0, 1]]))},
                    coords={"checkpoint_step": steps})
    assert lm_probes.jump_brackets(ds).tolist() == [[4, 8, -1]]


def test_the_body_transfers_and_the_token_layers_start_fresh(tmp_path):
    params = load_params(profile="smoke")
    params["language_model"]["sizes"] = {"tiny": {"n_layer": 1, "n_head": 2, "d_head": 4, "mlp_ratio": 2}}
    params["language_model"]["pretraining"].update(sizes=["tiny"], tasks=["dyck"], steps={"dyck": 4},
                                                   transfer="attention_mlp")
    params["language_model"]["rare_skills"]["sizes"] = []
    circuits = lm.pretrain(training(params), "tiny", "dyck", tmp_path, torch.device("cpu"))
    from emergence.core.model import SeedTransformer
    fresh = SeedTransformer(circuits.cfg, list(circuits.seeds))
    # attention_mlp: the attention and MLP weights learned, everything else where the from-scratch twin starts
    block, start = circuits.blocks[0], fresh.blocks[0]
    assert not torch.equal(block.attn.qkv.weight, start.attn.qkv.weight)
    assert not torch.equal(block.mlp.fc.weight, start.mlp.fc.weight)
    for name, value in fresh.state_dict().items():
        if not name.startswith(("blocks.0.attn.", "blocks.0.mlp.")):
            assert torch.equal(circuits.state_dict()[name], value), name
    params["language_model"]["pretraining"]["transfer"] = "body"
    body = lm.pretrain(training(params), "tiny", "dyck", tmp_path, torch.device("cpu"))
    assert torch.equal(body.wte, fresh.wte) and torch.equal(body.head.weight, fresh.head.weight)
    assert not torch.equal(body.blocks[0].attn.qkv.weight, fresh.blocks[0].attn.qkv.weight)
    assert not torch.equal(body.wpe, fresh.wpe)   # body carries the learned positions
    assert torch.equal(body.blocks[0].attn.qkv.weight, circuits.blocks[0].attn.qkv.weight)
    params["language_model"]["pretraining"]["transfer"] = "all"
    everything = lm.pretrain(training(params), "tiny", "dyck", tmp_path, torch.device("cpu"))
    assert not torch.equal(everything.head.weight, fresh.head.weight)
    key_all = lm.training_key(training(params), "tiny", "dyck")
    params["language_model"]["pretraining"]["transfer"] = "body"
    assert lm.training_key(training(params), "tiny", "dyck") != key_all   # the transfer is part of the twin's key
    # and so is its own length, but not another task's
    key = lm.training_key(training(params), "tiny", "dyck")
    params["language_model"]["pretraining"]["steps"] = {"dyck": 4, "random": 9}
    assert lm.training_key(training(params), "tiny", "dyck") == key
    params["language_model"]["pretraining"]["steps"] = {"dyck": 5}
    assert lm.training_key(training(params), "tiny", "dyck") != key


@pytest.mark.parametrize("steps, message", [
    ({"dyck": 700, "neural_ca": 250}, "a step count for every task of language_model.pretraining.tasks, missing ['random']"),
    ({"dyck": 700, "neural_ca": 250, "random": 700, "maze": 5}, "keys from ['dyck', 'neural_ca', 'random']"),
    ({"dyck": 0, "neural_ca": 250, "random": 700}, "whole numbers in [1, 10000000], got {'dyck': 0}"),
])
def test_each_pretraining_task_needs_its_own_step_count(steps, message):
    from emergence.pipeline.config import ConfigError, validate

    params = load_params(profile="default")
    params["language_model"]["pretraining"]["steps"] = steps
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate(params)


def test_a_variant_trained_group_by_group_elsewhere_has_the_bytes_of_one_build(tmp_path, monkeypatch):
    """A from-scratch variant's seed groups trained apart (workers, array tasks): its build then
    trains nothing and writes the whole build's bytes, train.nc and checkpoints; a
    pre-pretrained twin stays whole."""
    import hashlib

    from emergence.core import train
    from emergence.runs import cache
    from emergence.runs.lm_builds import variant_requests

    params = load_params(profile="smoke")
    params["language_model"]["sizes"] = {"tiny": {"n_layer": 1, "n_head": 2, "d_head": 4, "mlp_ratio": 2}}
    params["language_model"]["pretraining"].update(sizes=["tiny"], tasks=["dyck"])
    params["language_model"]["rare_skills"]["sizes"] = ["tiny"]
    params["language_model"]["train"].update(n_seeds=3, seeds_per_group=2, steps=8, eval_every=4, checkpoint_every=4)

    def files(entry):
        return {str(p.relative_to(entry)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(entry.rglob("*")) if p.is_file() and p.name not in cache.RECORDS}

    whole = variant_requests(training(params), tmp_path / "whole")["tiny"]
    whole_entry = cache.cached(tmp_path / "whole", whole.name, whole.key, whole.build)
    requests = variant_requests(training(params), tmp_path / "split")
    assert [p.cost / requests["tiny"].cost for p in requests["tiny"].parts] == pytest.approx([2 / 3, 1 / 3])
    assert requests["tiny+dyck"].parts == ()
    # the rare-skills twin trains from scratch too, group by group, under keys of its own corpus
    rare = requests["tiny@rare"]
    assert len(rare.parts) == 2 and rare.key != requests["tiny"].key
    assert not {p.key for p in rare.parts} & {p.key for p in requests["tiny"].parts}
    spent = sum(part.run() for part in requests["tiny"].parts)
    monkeypatch.setattr(train, "train_step", lambda *a, **k: pytest.fail("the build trained a step"))
    r = requests["tiny"]
    split = cache.cached(tmp_path / "split", r.name, r.key, r.build)
    assert files(split) == files(whole_entry) and any("checkpoints" in f for f in files(split))
    # it counts the stored groups' training (not the set-up around it, which `spent` holds too)
    trained = sum(cache._build_record(g)["seconds"] for g in (tmp_path / "split" / "groups").iterdir())
    assert spent >= trained > 0 and cache._build_record(split)["seconds"] >= trained - 0.01


def test_a_variant_given_more_seeds_trains_only_the_seed_groups_it_adds(tmp_path, monkeypatch):
    """2 -> 3 seeds (groups of 2) trains the new group alone, and the variant has the bytes of one
    built from nothing; a pre-pretrained twin, keyed by all its seeds, is priced whole."""
    import copy
    import hashlib

    from emergence.core import train
    from emergence.runs import cache
    from emergence.runs.lm_builds import variant_requests

    params = load_params(profile="smoke")
    params["language_model"]["sizes"] = {"tiny": {"n_layer": 1, "n_head": 2, "d_head": 4, "mlp_ratio": 2}}
    params["language_model"]["pretraining"].update(sizes=["tiny"], tasks=["dyck"])
    params["language_model"]["rare_skills"]["sizes"] = []
    params["language_model"]["train"].update(n_seeds=2, seeds_per_group=2, steps=8, eval_every=4, checkpoint_every=4)
    three = copy.deepcopy(params)
    three["language_model"]["train"]["n_seeds"] = 3

    def build(p, scratch):
        r = variant_requests(training(p), scratch)["tiny"]
        return cache.cached(scratch, r.name, r.key, r.build)

    def files(entry):
        return {str(q.relative_to(entry)): hashlib.sha256(q.read_bytes()).hexdigest()
                for q in sorted(entry.rglob("*")) if q.is_file() and q.name not in cache.RECORDS}

    build(params, tmp_path / "scratch")
    requests = variant_requests(training(three), tmp_path / "scratch")
    assert [p.stored for p in requests["tiny"].parts] == [True, False]
    assert requests["tiny"].todo == pytest.approx(1 / 3) and requests["tiny+dyck"].todo == 1.0
    steps, step = [], train.train_step
    monkeypatch.setattr(train, "train_step", lambda *a, **k: steps.append(1) or step(*a, **k))
    grown = build(three, tmp_path / "scratch")
    assert len(steps) == 8
    assert files(grown) == files(build(three, tmp_path / "cold"))


def test_a_pattern_probe_of_one_period_holds_only_cycles_of_that_period():
    from emergence.core.tasks import corpus as cp
    from emergence.pipeline.config import ConfigError, validate

    params = load_params(profile="smoke")
    corpus = training(params).corpus
    vocab = lm.vocab_of(corpus)
    for period in (2, 3):
        prompts, answers = lm_probes.period_probe_set(period, 16, vocab, corpus)
        assert prompts.shape == (16, corpus.pattern_length) and len(set(map(tuple, prompts))) == 16
        # a cycle of that many tokens: the answer is the token `period` back
        assert (answers == prompts[:, -period]).all()
        assert (prompts[:, period:] == prompts[:, :-period]).all()
        if period == 3:
            assert (prompts[:, 2:] != prompts[:, :-2]).any()   # not cycles of two in disguise
    # the first n of a period are the same however many of the mixed probes it took to find them
    small, _ = lm_probes.period_probe_set(3, 4, vocab, corpus)
    np.testing.assert_array_equal(small, lm_probes.period_probe_set(3, 16, vocab, corpus)[0][:4])
    kinds = lm_probes.ProbeArgs(kinds=["spans", "patterns_period2"], n_prompts=8, solved_accuracy=0.5)
    probes = lm_probes.make_probes(corpus, kinds)
    assert list(probes) == ["spans", "patterns_period2"]
    assert lm_probes.probe_kinds(corpus) == [*cp.PROBES, "patterns_period2", "patterns_period3"]
    # a period the corpus never writes stops validation, naming the key and what it allows
    params["language_model"]["probes"]["kinds"] = ["patterns_period4"]
    with pytest.raises(ConfigError, match=r"language_model\.probes\.kinds: names from .*patterns_period3"):
        validate(params)
