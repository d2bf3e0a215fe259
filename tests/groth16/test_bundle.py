"""The JSON exchange bundle: round trip, malformed input, and an independent verifier."""
from __future__ import annotations

import copy
import json

import pytest
from py_ecc.fields import optimized_bls12_381_FQ12 as FQ12
from py_ecc.optimized_bls12_381 import FQ, FQ2, add, final_exponentiate, is_on_curve, multiply, neg
from py_ecc.optimized_bls12_381 import b as B1  # noqa: N812 - py_ecc's curve coefficients, upper case as the constants they are here
from py_ecc.optimized_bls12_381 import b2 as B2  # noqa: N812 - py_ecc's curve coefficients, upper case as the constants they are here
from py_ecc.optimized_bls12_381.optimized_pairing import pairing

from gpu_engine.groth16 import api


@pytest.fixture(scope="module")
def vk(params_dir) -> api.VerifyingKey:
    return api.load_params("window-post", params_dir).vk


@pytest.fixture(scope="module")
def bundle(prove_one) -> dict:
    params, pp = prove_one("window-post", job_id="wp-bundle")
    return json.loads(json.dumps(api.make_bundle("window-post", "wp-bundle", params.vk, [pp])))


def test_round_trip_verifies(bundle, vk):
    assert api.verify_bundle(bundle, vk) == [(0, True)]
    assert bundle["proof_kind"] == "window-post" and bundle["job_id"] == "wp-bundle"
    assert bundle["vk_fingerprint"] == vk.fingerprint()
    assert all(isinstance(x, str) for x in bundle["partitions"][0]["public_inputs"])


def test_tampered_bundle_fails_the_partition(bundle, vk):
    bad = copy.deepcopy(bundle)
    bad["partitions"][0]["public_inputs"][0] = str(int(bad["partitions"][0]["public_inputs"][0]) + 1)
    assert api.verify_bundle(bad, vk) == [(0, False)]
    swapped = copy.deepcopy(bundle)
    proof = swapped["partitions"][0]["proof"]
    proof["a"], proof["c"] = proof["c"], proof["a"]
    assert api.verify_bundle(swapped, vk) == [(0, False)]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda b: b.pop("vk"), r"^vk: missing"),
        (lambda b: b["vk"]["ic"].clear(), r"vk\.ic: expected a non-empty list"),
        (lambda b: b["vk"]["alpha_g1"].__setitem__(0, "12x"), r"vk\.alpha_g1\[0\]: expected a decimal string"),
        (lambda b: b["vk"]["alpha_g1"].__setitem__(0, "5"), r"vk\.alpha_g1: .*not a valid G1 point"),
        (lambda b: b["vk"]["beta_g2"][1].__setitem__(1, "7"), r"vk\.beta_g2: .*not a valid G2 point"),
        (lambda b: b["partitions"][0]["proof"].pop("b"), r"partitions\[0\]\.proof\.b: missing"),
        (lambda b: b.__setitem__("vk_fingerprint", "ABC"), r"vk_fingerprint: expected 64 lowercase hex digits"),
        (lambda b: b["partitions"][0]["public_inputs"].__setitem__(0, str(2**255)), r"not an element of Fr"),
        (lambda b: b["partitions"].append(copy.deepcopy(b["partitions"][0])), r"partitions\[1\]\.index: partition 0 appears twice"),
        (lambda b: b["partitions"][0].__setitem__("index", "0"), r"partitions\[0\]\.index: expected a non-negative integer"),
        (lambda b: b.__setitem__("partitions", {}), r"partitions: expected a non-empty list"),
    ],
)
def test_malformed_bundle_names_the_field(bundle, vk, mutate, message):
    bad = copy.deepcopy(bundle)
    mutate(bad)
    with pytest.raises(api.BundleFormatError, match=message):
        api.verify_bundle(bad, vk)


def test_not_an_object_is_malformed(vk):
    with pytest.raises(api.BundleFormatError, match="expected an object"):
        api.verify_bundle([], vk)


# --- the independent check: py_ecc's own pairing, fed only from the JSON -------------------

def _g1(p: list[str]):
    x, y = (FQ(int(v)) for v in p)
    point = (x, y, FQ.one())
    assert is_on_curve(point, B1)
    return point


def _g2(p: list[list[str]]):
    (x0, x1), (y0, y1) = p
    point = (FQ2([int(x0), int(x1)]), FQ2([int(y0), int(y1)]), FQ2.one())
    assert is_on_curve(point, B2)
    return point


def _py_ecc_verify(bundle: dict) -> bool:
    vk, part = bundle["vk"], bundle["partitions"][0]
    acc = _g1(vk["ic"][0])
    for base, x in zip(vk["ic"][1:], part["public_inputs"]):
        acc = add(acc, multiply(_g1(base), int(x)))
    proof = part["proof"]
    pairs = [
        (_g2(proof["b"]), _g1(proof["a"])),
        (_g2(vk["beta_g2"]), neg(_g1(vk["alpha_g1"]))),
        (_g2(vk["gamma_g2"]), neg(acc)),
        (_g2(vk["delta_g2"]), neg(_g1(proof["c"]))),
    ]
    f = FQ12.one()
    for q, p in pairs:
        f = f * pairing(q, p, final_exponentiate=False)
    return final_exponentiate(f) == FQ12.one()


def test_py_ecc_verifies_the_exported_bundle(bundle):
    assert _py_ecc_verify(bundle)


def test_py_ecc_rejects_a_tampered_input(bundle):
    bad = copy.deepcopy(bundle)
    bad["partitions"][0]["public_inputs"][1] = str(int(bad["partitions"][0]["public_inputs"][1]) + 1)
    assert not _py_ecc_verify(bad)
