"""The field and point code also builds as CUDA host code (nvcc -x cu), the way nvcc sees
the `__host__ __device__` functions, and that build gives the same answers."""
from __future__ import annotations

import ctypes
import random
import shutil

import numpy as np
import pytest
from py_arkworks_bls12381 import G1Point, Scalar

from gpu_engine.backends import emulation, limbs
from gpu_engine.backends.device_plan import MsmPlan, NttPlan
from gpu_engine.groth16 import field

pytestmark = pytest.mark.emulation


@pytest.fixture(scope="module")
def nvcc_lib(tmp_path_factory) -> ctypes.CDLL:
    if shutil.which("nvcc") is None:
        pytest.fail("nvcc not found: install the CUDA toolkit to build the kernels")
    path = emulation.build_library("nvcc", tmp_path_factory.mktemp("nvcc-host"))
    return ctypes.CDLL(str(path))


def test_nvcc_host_build_fr_mul(nvcc_lib):
    rng = random.Random(51)
    a = [rng.randrange(field.R) for _ in range(50)]
    b = [rng.randrange(field.R) for _ in range(50)]
    pa, pb = limbs.pack_fr(a), limbs.pack_fr(b)
    out = np.zeros_like(pa)
    ptr = lambda x: ctypes.c_void_p(x.ctypes.data)  # noqa: E731 - a one-line thunk reads better inline
    nvcc_lib.vm_fr_op(2, ptr(pa), ptr(pb), ptr(out), ctypes.c_uint32(50))
    r_inv = pow(2, -256, field.R)
    assert limbs.unpack_fr(out) == [x * y * r_inv % field.R for x, y in zip(a, b)]


def test_nvcc_host_build_runs_ntt_and_msm(nvcc_lib):
    ops = emulation.HostOps(nvcc_lib)
    rng = random.Random(52)
    v = [rng.randrange(field.R) for _ in range(32)]
    assert NttPlan(ops).ntt(v, coset=True) == field.reference_ntt(v, coset=True)
    pts = [G1Point() * Scalar(rng.randrange(1, field.R)) for _ in range(12)]
    sc = [rng.randrange(field.R) for _ in range(12)]
    assert MsmPlan(ops).msm_g1(pts, sc) == G1Point.multiexp_unchecked(pts, [Scalar(s) for s in sc])


def test_nvcc_host_build_runs_the_odd_coset_h(nvcc_lib):
    ops = emulation.HostOps(nvcc_lib)
    rng = random.Random(53)
    a, b, c = ([rng.randrange(field.R) for _ in range(64)] for _ in range(3))
    assert NttPlan(ops).compute_h_odd_coset(a, b, c) == field.reference_h_odd_coset(a, b, c)
