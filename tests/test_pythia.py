"""The Pythia path on a tiny GPT-NeoX built and saved here (no download)."""
import pytest
import torch

transformers = pytest.importorskip("transformers")

from emergence.analysis import patching as pt
from emergence.runs import pythia


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    cfg = transformers.GPTNeoXConfig(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=32)
    torch.manual_seed(0)
    model = transformers.GPTNeoXForCausalLM(cfg)
    path = tmp_path_factory.mktemp("neox")
    model.save_pretrained(path)
    return path


def tokens(B=3, T=10):
    return torch.randint(0, 40, (1, B, T), generator=torch.Generator().manual_seed(1))


def test_hooked_model_gives_the_eager_logits(tiny_dir):
    ref = transformers.GPTNeoXForCausalLM.from_pretrained(tiny_dir, attn_implementation="eager").eval()
    model = pythia.load_checkpoint(str(tiny_dir), None)
    x = tokens()
    with torch.no_grad():
        expected = ref(input_ids=x[0]).logits
    torch.testing.assert_close(model(x)[0], expected, rtol=0, atol=1e-5)
    assert model.cfg.n_layer == 2 and model.cfg.n_head == 2


def test_self_patching_changes_nothing_and_patterns_are_causal(tiny_dir):
    model = pythia.load_checkpoint(str(tiny_dir), None)
    x = tokens()
    every = [(l, h) for l in range(2) for h in range(2)]
    for stage in pt.STAGES:
        own = pt.record_attention(model, x, stage)
        torch.testing.assert_close(model(x, pt.patch_hooks(own, every, stage)), model(x), rtol=0, atol=1e-6)
    pattern = pt.record_attention(model, x)[0]
    assert pattern.shape == (1, 3, 2, 10, 10)
    assert torch.all(pattern[..., torch.triu(torch.ones(10, 10, dtype=torch.bool), 1)] == 0)


def test_patching_a_different_checkpoint_moves_the_output(tiny_dir, tmp_path):
    old = pythia.load_checkpoint(str(tiny_dir), None)
    other = transformers.GPTNeoXForCausalLM.from_pretrained(tiny_dir)
    with torch.no_grad():
        for layer in other.gpt_neox.layers:
            layer.attention.query_key_value.weight.mul_(8.0)
    other.save_pretrained(tmp_path / "new")
    new = pythia.load_checkpoint(str(tmp_path / "new"), None)
    x = tokens()
    donor = pt.record_attention(new, x)
    patched = old(x, pt.patch_hooks(donor, [(0, 0), (0, 1), (1, 0), (1, 1)]))
    assert not torch.allclose(patched, old(x), atol=1e-4)


def test_probe_encoding_and_names():
    assert pythia.hub_name("410m", 0) == "EleutherAI/pythia-410m"
    assert pythia.hub_name("14m", 3) == "EleutherAI/pythia-14m-seed3"
    assert pythia.PYTHIA_STEPS[:12] == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]
    assert pythia.PYTHIA_STEPS[-1] == 143000 and len(pythia.PYTHIA_STEPS) == 154
    prompt, answer = pythia.text_probes("digits", 1)[0]
    digits = prompt.split()
    assert len(digits) == 15 and digits[:7] == digits[8:] and answer == " " + digits[7]

    class WordTokenizer:  # a stand-in for the Pythia tokenizer: one token per word
        def __call__(self, text):
            return {"input_ids": [hash(w) % 40 for w in text.split()]}

    enc = pythia.encode_probes(WordTokenizer(), pythia.text_probes("digits", 6))
    assert list(enc) == [15] and enc[15][0].shape == (6, 15)


def test_run_brackets_and_patches_local_checkpoints(tiny_dir, tmp_path):
    """The whole Pythia analysis on three local 'checkpoints': two untrained, one that answers."""
    class WordTokenizer:
        def __call__(self, text):
            return {"input_ids": [int(w) + 1 for w in text.split()]}  # digits -> ids 1..10

    answers_model = pythia.HookedNeoX(transformers.GPTNeoXForCausalLM.from_pretrained(tiny_dir))

    def fake_solved(step):
        return step >= 4

    class Oracle:  # from step 4 on, predicts the digit 7 positions back (the repetition answer)
        def __init__(self, inner, on):
            self.inner, self.on, self.cfg, self.seeds, self.n_seeds = inner, on, inner.cfg, (0,), 1

        def select_seeds(self, idx):
            return self

        def __call__(self, tokens, hooks=None):
            logits = self.inner(tokens, hooks)
            if self.on:
                target = torch.roll(tokens, 7, dims=-1)
                logits = logits + 50.0 * torch.nn.functional.one_hot(target, logits.shape[-1])
            return logits

    calls = []

    def loader(source, step, seed, device):
        calls.append(step)
        return Oracle(answers_model, fake_solved(step))

    params = pythia.PythiaArgs(enabled=True, sizes=["tiny"], seeds=[0], max_step=16, capability="digits", n_prompts=8,
                               solved_accuracy=0.9, top_k=[1, 4], device="cpu")  # a model of its own: not validated
    ds = pythia.run(params, loader=loader, tokenizer_loader=lambda source: WordTokenizer())
    assert int(ds["old_step"][0, 0]) == 2 and int(ds["new_step"][0, 0]) == 4 and int(ds["censored"][0, 0]) == 0
    assert int(ds["evaluations"][0, 0]) <= 4
    assert ds["top_k_recovery"].shape == (1, 1, 2)
