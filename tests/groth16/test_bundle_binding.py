"""A verified bundle proves something about its job: it is checked against a trusted key (not the one
it carries) and the public inputs derived from (kind, job id, index); each broken binding is named."""
from __future__ import annotations

import copy
import json

import pytest

from gpu_engine.backends.cpu import CpuBackend
from gpu_engine.groth16 import api
from gpu_engine.groth16.params_cache import circuit_shape
from gpu_engine.groth16.setup import generate_params

JOB = "ps-window-post-bound-1"


@pytest.fixture(scope="module")
def params(params_dir) -> api.Params:
    return api.load_params("window-post", params_dir)


@pytest.fixture(scope="module")
def bundle(params) -> dict:
    pp = api.prove_partition(params, api.synthesize_partition("window-post", JOB, 0), CpuBackend())
    return json.loads(json.dumps(api.make_bundle("window-post", JOB, params.vk, [pp])))


@pytest.fixture(scope="module")
def rogue(params) -> tuple[api.Params, dict]:
    """A setup of the sender's own making for the same circuit, and a bundle of another job proved under it."""
    matrices, shape = circuit_shape("window-post", 1)
    own = generate_params("window-post", 1, matrices, shape)
    pp = api.prove_partition(own, api.synthesize_partition("window-post", "forged-1", 0), CpuBackend())
    return own, json.loads(json.dumps(api.make_bundle("window-post", "forged-1", own.vk, [pp])))


def test_a_sound_bundle_is_bound(bundle, params):
    check = api.check_bundle(bundle, params.vk)
    assert check.ok and check.partitions == [(0, True)] and check.mismatches == [] and check.notes == []


def test_relabelled_job_id_is_a_named_mismatch(bundle, params):
    relabelled = copy.deepcopy(bundle)
    relabelled["job_id"] = "someone-elses-job"
    check = api.check_bundle(relabelled, params.vk)
    assert not check.ok
    assert check.mismatches == ["partitions[0].public_inputs: not the inputs of (window-post, someone-elses-job, 0)"]
    assert check.partitions == [(0, False)]
    assert api.verify_bundle(relabelled, params.vk) == [(0, False)]


def test_relabelled_kind_is_a_named_mismatch(bundle, params_dir):
    relabelled = copy.deepcopy(bundle)
    relabelled["proof_kind"] = "winning-post"
    winning = api.load_params("winning-post", params_dir).vk
    check = api.check_bundle(relabelled, winning)
    assert not check.ok
    assert any(m.startswith("vk_fingerprint: the bundle names key ") for m in check.mismatches)
    assert f"partitions[0].public_inputs: not the inputs of (winning-post, {JOB}, 0)" in check.mismatches
    assert check.partitions == [(0, False)]


def test_relabelled_index_is_a_named_mismatch(params):
    proofs = [api.prove_partition(params, api.synthesize_partition("window-post", JOB, 0), CpuBackend())]
    bundle = json.loads(json.dumps(api.make_bundle("window-post", JOB, params.vk, proofs)))
    bundle["partitions"][0]["index"] = 1
    check = api.check_bundle(bundle, params.vk)
    assert "partitions[0].index: partition 1 out of range for window-post (1 partitions)" in check.mismatches
    assert "partitions: window-post has 1; missing index(es) 0" in check.mismatches


def test_a_bundle_under_a_foreign_key_fails_even_with_that_key_inside(rogue, params):
    own, forged = rogue
    assert api.check_bundle(forged, own.vk).ok  # valid under the key it carries...
    check = api.check_bundle(forged, params.vk)  # ...but not under the engine's
    assert not check.ok and check.partitions == [(0, False)]
    assert check.mismatches == [f"vk_fingerprint: the bundle names key {own.vk.fingerprint()}, the trusted "
                                f"window-post key is {params.vk.fingerprint()}"]
    assert check.notes == ["vk: the embedded key is not the trusted key (informative only: not used)"]


def test_the_embedded_key_is_never_used_and_must_match_the_named_one(bundle, rogue, params):
    own, _ = rogue
    swapped = copy.deepcopy(bundle)
    swapped["vk"] = api.vk_json(own.vk)
    check = api.check_bundle(swapped, params.vk)
    assert check.partitions == [(0, True)]  # verified against the trusted key, whatever the bundle carries
    assert check.mismatches == [f"vk: the embedded key ({own.vk.fingerprint()}) is not the key the bundle names "
                                f"({params.vk.fingerprint()})"]
    assert check.notes == ["vk: the embedded key is not the trusted key (informative only: not used)"]
    del swapped["vk_fingerprint"]  # a bundle from before fingerprints: nothing to contradict
    assert api.check_bundle(swapped, params.vk).ok


def test_a_bundle_from_before_fingerprints_gets_a_note(bundle, params):
    old = copy.deepcopy(bundle)
    del old["vk_fingerprint"]
    check = api.check_bundle(old, params.vk)
    assert check.ok and check.notes == ["vk_fingerprint: absent (a bundle made before bundles named their key)"]
