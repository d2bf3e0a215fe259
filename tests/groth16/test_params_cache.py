"""The parameter cache, a trusted setup: reused from disk; a missing, corrupt or stale file is an error that
names the file and the command to regenerate it, never silently replaced; `regenerate_params` replaces on purpose."""
from __future__ import annotations

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


def test_missing_file_is_an_error_unless_creation_is_asked(params_dir):
    with pytest.raises(api.ParamsMissing) as caught:
        api.load_params(KIND, params_dir)
    message = str(caught.value)
    assert f"{params_dir}/{KIND}-" in message and ".params: missing" in message
    assert f"manage.py genparams --force --kind {KIND} --scale 1 --params-dir {params_dir}" in message
    assert not list(params_dir.glob("*.params"))


def test_generated_once_then_read_back(params_dir):
    steps = []
    first = api.load_params(KIND, params_dir, progress=lambda step, done, total: steps.append((step, done, total)),
                            create=True)
    assert steps and steps[-1][0] == "done" and steps[-1][1] == steps[-1][2]
    path = _only_file(params_dir)
    assert first.shape_hash in path.name
    mtime = path.stat().st_mtime_ns
    again = _load_from_disk(params_dir)
    assert path.stat().st_mtime_ns == mtime
    assert again.vk.alpha_g1 == first.vk.alpha_g1 and again.h_g1 == first.h_g1
    assert not list(params_dir.glob("*.tmp"))


@pytest.mark.parametrize("damage", ["flip_byte", "truncate", "garbage"])
def test_corrupt_file_is_an_error_naming_it_and_is_left_alone(params_dir, damage):
    api.load_params(KIND, params_dir, create=True)
    path = _only_file(params_dir)
    raw = bytearray(path.read_bytes())
    if damage == "flip_byte":
        raw[len(raw) // 2] ^= 0x01
    elif damage == "truncate":
        raw = raw[: len(raw) // 3]
    else:
        raw = bytearray(b"not a parameter file")
    path.write_bytes(bytes(raw))
    for create in (False, True):  # not even a first start may replace a file that is there
        params_cache.forget_loaded(params_dir)
        with pytest.raises(api.ParamsUnavailable) as caught:
            api.load_params(KIND, params_dir, create=create)
        message = str(caught.value)
        assert str(path) in message and "unusable" in message
        assert f"`manage.py genparams --force --kind {KIND} --scale 1 --params-dir {params_dir}`" in message
    assert path.read_bytes() == bytes(raw)


def test_regenerate_makes_a_new_key_on_purpose(params_dir):
    first = api.load_params(KIND, params_dir, create=True)
    path = _only_file(params_dir)
    path.write_bytes(b"corrupt")
    regenerated = api.regenerate_params(KIND, params_dir)
    assert regenerated.vk.fingerprint() != first.vk.fingerprint()  # new toxic waste: really a new setup
    assert _load_from_disk(params_dir).vk.fingerprint() == regenerated.vk.fingerprint()
    witness = api.synthesize_partition(KIND, "after-regen", 0)
    from gpu_engine.backends.cpu import CpuBackend

    pp = api.prove_partition(regenerated, witness, CpuBackend())
    assert api.verify_partition(regenerated.vk, pp.public_inputs, pp.proof)


def test_stale_file_for_another_shape_is_refused(params_dir):
    params = api.load_params(KIND, params_dir, create=True)
    data = dump_params(params)
    with pytest.raises(ParamsFileError, match="stale"):
        load_params_bytes(data, "0" * 64)


def test_file_under_the_right_name_with_another_shape_inside_is_refused(params_dir):
    api.load_params(KIND, params_dir, create=True)
    path = _only_file(params_dir)
    foreign = api.load_params("window-post", params_dir, create=True)
    path.write_bytes(dump_params(foreign))  # valid checksum, wrong circuit
    params_cache.forget_loaded(params_dir)
    with pytest.raises(api.ParamsUnavailable, match="stale"):
        api.load_params(KIND, params_dir)
