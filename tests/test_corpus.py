import numpy as np
import pytest

from emergence.common.schema import load
from emergence.core.tasks import corpus as c

P = load(c.CorpusArgs, {"corpus_seed": 0, "holdout_mod": 5, "n_random": 8, "synthetic_tokens": 0, "digit_length": 6,
                        "repeats": 3, "span_length": 5, "filler_length": 4, "max_period": 3, "pattern_length": 10,
                        "noise_length": 12,
                        "mixture": {"digits": 1.0, "spans": 1.0, "patterns": 1.0, "ioi": 1.0, "noise": 1.0}},
         "corpus")
VOCAB = c.Vocab(n_random=8)


def test_documents_by_hand():
    rng = np.random.default_rng(0)
    key, doc = c.draw_document(rng, "digits", VOCAB, P)
    assert len(doc) == 18 and doc[:6] == doc[6:12] == doc[12:]
    _, doc = c.draw_document(rng, "spans", VOCAB, P)
    assert doc[:5] == doc[-5:] and len(doc) == 14
    _, doc = c.draw_document(rng, "ioi", VOCAB, P)
    a, b = doc[1], doc[3]
    assert a != b and doc[9] == b and doc[-2] == a and doc[-1] == "."


def test_rotations_share_a_key():
    assert c._cyclic_key("digits", list("0731")) == c._cyclic_key("digits", list("3107"))
    assert c._cyclic_key("digits", list("0731")) != c._cyclic_key("digits", list("0713"))


@pytest.mark.parametrize("kind", c.PROBES)
def test_probes_are_held_out_of_the_corpus(kind):
    prompts, answers, keys = c.probe_set(kind, 20, VOCAB, P, seed=0)
    assert prompts.shape[0] == 20 and len(set(keys)) == 20
    assert all(c.held_out(k, P.holdout_mod) for k in keys)
    stream = " " + " ".join(VOCAB.text(c.sample_batch(s, 0, 50, VOCAB, P, 64).ravel()) for s in range(4)) + " "
    for prompt, answer in zip(prompts, answers):
        text = VOCAB.text(list(prompt) + [answer])
        assert f" {text} " not in stream, f"probe seen in training: {text}"


def test_the_corpus_does_contain_the_non_held_out_versions():
    stream = " ".join(VOCAB.text(c.sample_batch(0, s, 50, VOCAB, P, 64).ravel()) for s in range(2))
    assert "When" in stream and "<eos>" in stream
    for d in range(10):
        assert str(d) in stream.split()


def test_batches_are_a_pure_function_of_seed_and_step():
    a = c.sample_batch(3, 17, 4, VOCAB, P, 32)
    assert a.shape == (4, 32) and a.max() < VOCAB.size
    assert np.array_equal(a, c.sample_batch(3, 17, 4, VOCAB, P, 32))
    assert not np.array_equal(a, c.sample_batch(4, 17, 4, VOCAB, P, 32))


def test_probe_answers_follow_the_rule():
    prompts, answers, _ = c.probe_set("digits", 5, VOCAB, P, seed=1)
    for x, y in zip(prompts, answers):  # s + s[:-1] -> s[-1]
        assert y == x[5] and list(x[:5]) == list(x[6:])
    prompts, answers, _ = c.probe_set("ioi", 5, VOCAB, P, seed=1)
    for x, y in zip(prompts, answers):
        assert y == x[1] and x[3] == x[9]


def test_dyck_prefixes_are_well_formed():
    from emergence.core.tasks.dyck import is_dyck_prefix, sample_dyck

    rng = np.random.default_rng(0)
    for _ in range(50):
        seq = sample_dyck(rng, k=3, length=40, max_depth=4)
        assert len(seq) == 40 and max(seq) < 6 and is_dyck_prefix(seq, 4)
    assert is_dyck_prefix([0, 2, 3, 1], 2) and not is_dyck_prefix([0, 3], 2) and not is_dyck_prefix([0, 0, 0], 2)
