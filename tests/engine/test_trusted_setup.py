"""Parameters are a trusted setup: an engine generates them on its first start only, never once proofs
were issued under a key; an unusable file stops the start with its name and the command to
regenerate it; pool children never generate."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from gpu_engine.engine.proving import ParamsRef, ProvingPool
from gpu_engine.groth16 import api, params_cache
from gpu_engine.models import JobStatus, ProofJob

KIND = "winning-post"


@pytest.fixture
def fresh_dir(tmp_path):
    yield tmp_path
    params_cache.forget_loaded(tmp_path)


@pytest.mark.slow
@pytest.mark.django_db
def test_first_start_generates_the_parameters(make_engine, fresh_dir):
    engine = make_engine(params_dir=fresh_dir)
    engine.prepare()
    assert sorted(p.name.split("-")[0] for p in fresh_dir.glob("*.params")) == sorted(
        k.split("-")[0] for k in api.PROOF_KINDS)


@pytest.mark.slow
@pytest.mark.django_db
def test_missing_parameters_after_issued_proofs_stop_the_start(make_engine, fresh_dir, params_dir):
    fingerprint = api.load_params(KIND, params_dir).vk.fingerprint()
    ProofJob.objects.create(job_id="issued-1", proof_kind=KIND, status=JobStatus.DONE, vk_fingerprint=fingerprint)
    engine = make_engine(params_dir=fresh_dir)
    with pytest.raises(api.ParamsUnavailable) as caught:
        engine.prepare()
    message = str(caught.value)
    assert f"missing, but 1 {KIND} proof(s) were issued under key {fingerprint}" in message
    assert f"`manage.py genparams --force --kind {KIND} --scale 1 --params-dir {fresh_dir}`" in message
    assert not list(fresh_dir.glob(f"{KIND}-*.params"))  # no silent new setup
    with pytest.raises(CommandError, match=f"were issued under key {fingerprint}"):
        call_command("genparams", "--kind", KIND, "--params-dir", str(fresh_dir), stdout=StringIO())
    out, err = StringIO(), StringIO()
    call_command("genparams", "--kind", KIND, "--params-dir", str(fresh_dir), "--force", stdout=out, stderr=err)
    assert f"1 {KIND} proof(s) issued under the previous key will no longer verify" in err.getvalue()
    engine.prepare()
    assert engine.params[KIND].vk.fingerprint() != fingerprint


@pytest.mark.slow
@pytest.mark.django_db
def test_a_corrupt_file_stops_the_start(make_engine, fresh_dir):
    path = params_cache.params_path(fresh_dir, KIND, params_cache.circuit_shape(KIND, 1)[1])
    path.write_bytes(b"VMG16PK\x01 not really")
    engine = make_engine(params_dir=fresh_dir)
    with pytest.raises(api.ParamsUnavailable, match=f"{path}: unusable"):
        engine.prepare()
    assert path.read_bytes() == b"VMG16PK\x01 not really"


def test_pool_children_never_generate(fresh_dir, params_dir):
    pool = ProvingPool(1)
    pool.start()
    try:
        witness = api.synthesize_partition(KIND, "child-no-setup", 0)
        with pytest.raises(api.ParamsMissing, match=".params: missing"):
            pool.prove_device(ParamsRef.of(KIND, 1, fresh_dir), witness)
        out, _ = pool.prove_device(ParamsRef.of(KIND, 1, params_dir), witness)  # the prepared ones serve
        assert out is not None
    finally:
        pool.shutdown()
    assert not list(fresh_dir.iterdir())
