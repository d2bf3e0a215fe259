"""The parameter cache: reused from disk, corrupt or stale files regenerated, never used."""
from __future__ import annotations

import logging

import pytest

from gpu_engine.groth16 import api, params_cache
from gpu_engine.groth16.keys import ParamsFileError, dump_params, load_params_bytes

KIND = "winning-post"


@pytest.fixture
def params_dir(tmp_path):
    yield tmp_path
    params_cache.forget_loaded(tmp_path)


def _only_file(directory):
    files = sorted(directory.glob("*.params"))
    assert len(files) == 1, files
    return files[0]


def _load_from_disk(directory):
    params_cache.forget_loaded(directory)
    return api.load_params(KIND, directory)


def test_generated_once_then_read_back(params_dir):
    steps = []
    first = api.load_params(KIND, params_dir, progress=lambda step, done, total: steps.append((step, done, total)))
    assert steps and steps[-1][0] == "done" and steps[-1][1] == steps[-1][2]
    path = _only_file(params_dir)
    assert first.shape_hash in path.name
    mtime = path.stat().st_mtime_ns
    again = _load_from_disk(params_dir)
    assert path.stat().st_mtime_ns == mtime
    assert again.vk.alpha_g1 == first.vk.alpha_g1 and again.h_g1 == first.h_g1
    assert not list(params_dir.glob("*.tmp"))


@pytest.mark.parametrize("damage", ["flip_byte", "truncate", "garbage"])
def test_corrupt_file_is_regenerated_with_a_warning(params_dir, caplog, damage):
    first = api.load_params(KIND, params_dir)
    path = _only_file(params_dir)
    raw = bytearray(path.read_bytes())
    if damage == "flip_byte":
        raw[len(raw) // 2] ^= 0x01
    elif damage == "truncate":
        raw = raw[: len(raw) // 3]
    else:
        raw = bytearray(b"not a parameter file")
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="gpu_engine.groth16.params_cache"):
        regenerated = _load_from_disk(params_dir)
    assert "rejected" in caplog.text and "regenerating" in caplog.text
    assert regenerated.vk.alpha_g1 != first.vk.alpha_g1  # new toxic waste: really regenerated
    assert load_params_bytes(path.read_bytes(), first.shape_hash).vk.alpha_g1 == regenerated.vk.alpha_g1
    witness = api.synthesize_partition(KIND, "after-regen", 0)
    from gpu_engine.backends.cpu import CpuBackend

    pp = api.prove_partition(regenerated, witness, CpuBackend())
    assert api.verify_partition(regenerated.vk, pp.public_inputs, pp.proof)


def test_stale_file_for_another_shape_is_refused(params_dir):
    params = api.load_params(KIND, params_dir)
    data = dump_params(params)
    with pytest.raises(ParamsFileError, match="stale"):
        load_params_bytes(data, "0" * 64)


def test_file_under_the_right_name_with_another_shape_inside_is_regenerated(params_dir, caplog):
    params = api.load_params(KIND, params_dir)
    path = _only_file(params_dir)
    foreign = api.load_params("window-post", params_dir)
    path.write_bytes(dump_params(foreign))  # valid checksum, wrong circuit
    with caplog.at_level(logging.WARNING):
        again = _load_from_disk(params_dir)
    assert "stale" in caplog.text
    assert again.num_vars == params.num_vars and again.vk.alpha_g1 != foreign.vk.alpha_g1
