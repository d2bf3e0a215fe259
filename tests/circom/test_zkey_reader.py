"""The zkey reader against the real file snarkjs writes: every header number, point and
coefficient as snarkjs means it (its own verification_key.json agrees), sections found through
the table whatever their order, and every malformed variant refused with the section named."""
from __future__ import annotations

import pytest

from gpu_engine.circom import snarkjs_json
from gpu_engine.circom.binfile import CircomFormatError
from gpu_engine.circom.r1cs import read_r1cs
from gpu_engine.circom.wtns import read_wtns
from gpu_engine.circom.zkey import read_zkey
from gpu_engine.groth16.field import R
from gpu_engine.groth16.keys import VerifyingKey
from tests.circom import tools
from tests.circom.containers import join, replace, split


@pytest.fixture(scope="session")
def zkey_bytes(multiplier_circuit) -> bytes:
    return multiplier_circuit.zkey.read_bytes()


def test_header_and_vkey_match_snarkjs(multiplier_circuit, zkey_bytes):
    z = read_zkey(zkey_bytes)
    info = multiplier_circuit.info
    assert z.header.num_vars == info["wires"]
    assert z.header.num_public == info["outputs"] + info["public_inputs"]
    assert z.header.num_constraints == info["constraints"]
    assert z.header.domain_size >= info["constraints"] + z.header.num_public + 1
    vk = VerifyingKey(z.alpha_g1, z.beta_g2, z.gamma_g2, z.delta_g2, z.ic)
    assert snarkjs_json.verification_key(vk) == multiplier_circuit.vkey


def test_coefficients_are_the_r1cs_a_and_b(multiplier_circuit, zkey_bytes, tmp_path):
    """A.w * B.w from the zkey's coefficients equals C.w from the r1cs on every constraint row."""
    z = read_zkey(zkey_bytes)
    r1cs = read_r1cs(multiplier_circuit.r1cs.read_bytes())
    wtns = tools.wtns_calculate(multiplier_circuit, multiplier_circuit.sample_input(), tmp_path / "w.wtns")
    w = read_wtns(wtns.read_bytes(), expected_count=z.header.num_vars)
    a, b = [0] * z.header.domain_size, [0] * z.header.domain_size
    for row, sig, v in z.a_coeffs:
        a[row] = (a[row] + v * w[sig]) % R
    for row, sig, v in z.b_coeffs:
        b[row] = (b[row] + v * w[sig]) % R
    for k, (_, _, c) in enumerate(r1cs.constraints):
        assert a[k] * b[k] % R == sum(coef * w[i] for i, coef in c) % R
    # snarkjs's public rows: A[nConstraints + s][s] = 1
    n = r1cs.num_constraints
    assert all(a[n + s] == w[s] for s in range(z.header.num_public + 1))


def test_section_order_does_not_matter(zkey_bytes):
    head, sections = split(zkey_bytes)
    shuffled = join(head, list(reversed(sections)))
    a, b = read_zkey(zkey_bytes), read_zkey(shuffled)
    assert a.header == b.header and a.h_g1 == b.h_g1 and a.a_coeffs == b.a_coeffs and a.b_g2 == b.b_g2


@pytest.mark.parametrize("stype, label", [(2, "Groth16 header"), (4, "coefficients"), (7, "B2 points"),
                                          (9, "H points")])
def test_missing_section_is_named(zkey_bytes, stype, label):
    head, sections = split(zkey_bytes)
    with pytest.raises(CircomFormatError, match=rf"section {stype} \({label}\) is missing"):
        read_zkey(join(head, [s for s in sections if s[0] != stype]))


def test_duplicate_section_is_refused(zkey_bytes):
    head, sections = split(zkey_bytes)
    h = next(s for s in sections if s[0] == 9)
    with pytest.raises(CircomFormatError, match=r"section 9 \(H points\) appears twice"):
        read_zkey(join(head, sections + [h]))


def test_unknown_section_and_bad_magic_and_version(zkey_bytes):
    head, sections = split(zkey_bytes)
    with pytest.raises(CircomFormatError, match="unknown section type 77"):
        read_zkey(join(head, sections + [(77, b"")]))
    with pytest.raises(CircomFormatError, match="bad magic"):
        read_zkey(b"wtns" + zkey_bytes[4:])
    with pytest.raises(CircomFormatError, match="version 2 is not supported"):
        read_zkey(zkey_bytes[:4] + (2).to_bytes(4, "little") + zkey_bytes[8:])


def test_not_groth16(zkey_bytes):
    with pytest.raises(CircomFormatError, match="PLONK, not Groth16"):
        read_zkey(replace(zkey_bytes, 1, (2).to_bytes(4, "little")))


def test_a_section_of_the_wrong_size_is_named(zkey_bytes):
    head, sections = split(zkey_bytes)
    h = dict(sections)[9]
    with pytest.raises(CircomFormatError, match=r"zkey section 9 \(H points\): .* bytes where"):
        read_zkey(replace(zkey_bytes, 9, h[:-96]))
    with pytest.raises(CircomFormatError, match=r"section 3 \(IC\)"):
        read_zkey(replace(zkey_bytes, 3, dict(sections)[3] + bytes(96)))


def test_point_off_the_curve_is_named(zkey_bytes):
    _, sections = split(zkey_bytes)
    a = bytearray(dict(sections)[5])
    nonzero = next(i for i in range(0, len(a), 96) if any(a[i:i + 96]))
    a[nonzero] ^= 1
    with pytest.raises(CircomFormatError, match=rf"section 5 \(A points\): point {nonzero // 96} is not on"):
        read_zkey(replace(zkey_bytes, 5, bytes(a)))


def test_trailing_bytes_and_truncation(zkey_bytes):
    with pytest.raises(CircomFormatError, match="bytes after the last section"):
        read_zkey(zkey_bytes + b"\0")
    with pytest.raises(CircomFormatError, match="is truncated"):
        read_zkey(zkey_bytes[:-1])


def test_another_prime_is_refused_as_unsupported(zkey_bytes):
    _, sections = split(zkey_bytes)
    header = bytearray(dict(sections)[2])
    header[4] ^= 2  # the low byte of q
    with pytest.raises(CircomFormatError, match=r"section 2 \(Groth16 header\): unsupported prime"):
        read_zkey(replace(zkey_bytes, 2, bytes(header)))


def test_a_corrupted_coefficient_that_still_reads_gives_a_proof_that_does_not_verify(multiplier_circuit, zkey_bytes,
                                                                                      tmp_path):
    """What a reader cannot see (a value still in the field) the verification of every proof does."""
    import hashlib

    from gpu_engine.backends.cpu import CpuBackend
    from gpu_engine.circom import prover
    from gpu_engine.circom.keycache import dump_key, load_key_bytes
    from gpu_engine.groth16.verifier import verify_partition

    _, sections = split(zkey_bytes)
    coeffs = bytearray(dict(sections)[4])
    coeffs[4 + 44 * 5 + 12] ^= 1  # the low byte of the 6th coefficient's value
    corrupted = replace(zkey_bytes, 4, bytes(coeffs))
    wtns = tools.wtns_calculate(multiplier_circuit, multiplier_circuit.sample_input(), tmp_path / "w.wtns")
    values = read_wtns(wtns.read_bytes())
    results = []
    for raw in (zkey_bytes, corrupted):
        digest = hashlib.sha256(raw).hexdigest()
        key = load_key_bytes(dump_key(read_zkey(raw), digest), "m", digest)
        witness = prover.make_witness(key, "j", 0, values, 0.0)
        proof = prover.prove_finalize(key, witness, prover.prove_device(key, witness, CpuBackend()), CpuBackend())
        results.append(verify_partition(key.vk, proof.public_inputs, proof.proof))
    assert results == [True, False]
