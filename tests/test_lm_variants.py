import pytest

from emergence.common import lm_variants as lv

MAIN = {"digits": 1.0, "spans": 1.0, "patterns": 1.0, "ioi": 1.0, "noise": 1.0}


def test_names_say_which_variant_a_model_is():
    assert lv.variant_name("small") == "small"
    assert lv.variant_name("small", pretraining="dyck") == "small+dyck"
    assert lv.variant_name("small", corpus=lv.RARE) == "small@rare"
    with pytest.raises(ValueError):
        lv.variant_name("small", pretraining="dyck", corpus=lv.RARE)
    names = ["small", "medium", "small+dyck", "small@rare", "medium@rare"]
    assert lv.sizes(names) == ["small", "medium"]
    assert lv.rare_twins(names) == {"small": "small@rare", "medium": "medium@rare"}


def test_rare_capabilities_are_those_whose_documents_lost_share():
    caps = ["digits", "spans", "patterns_period2", "patterns_period3", "ioi"]
    rare = dict(MAIN, spans=0.1, patterns=0.1)
    assert lv.rare_capabilities(caps, MAIN, rare) == ["spans", "patterns_period2", "patterns_period3"]
    # scaling every weight changes no share; raising the others' weights lowers these shares
    assert lv.rare_capabilities(caps, MAIN, {k: 3 * w for k, w in MAIN.items()}) == []
    assert lv.rare_capabilities(caps, MAIN, dict(MAIN, digits=5.0)) == ["spans", "patterns_period2",
                                                                        "patterns_period3", "ioi"]
    assert lv.document_kind("patterns") == "patterns" and lv.document_kind("ioi") == "ioi"
