"""The packed-row NTT internals: slot packing, per-slot Montgomery reduction, bounds, worst cases."""
from __future__ import annotations

import random

import pytest

from gpu_engine.groth16 import field, ntt, ntt_packed
from gpu_engine.groth16.field import R

EDGES = [0, 1, 2, R - 2, R - 1]


def test_pack_unpack_round_trip_keeps_edge_values_and_order():
    slot_bytes = ntt_packed.plan(16, False).slot_bytes
    top = (1 << (8 * slot_bytes)) - 1  # a full slot must not spill into its neighbour
    values = EDGES + [top, 0, top] + [random.Random(1).randrange(R) for _ in range(8)]
    rows = ntt_packed.pack(iter(values), len(values), 4, slot_bytes)
    assert len(rows) == 4
    assert ntt_packed.unpack(rows, 4, slot_bytes) == values


@pytest.mark.parametrize("twiddle", EDGES + [7])
def test_redc_of_packed_products_is_the_modular_product_per_slot(twiddle):
    slot_bytes = ntt_packed.plan(16, False).slot_bytes
    slot_bits = 8 * slot_bytes
    xs = EDGES + [random.Random(2).randrange(R) for _ in range(3)]
    lo = sum(((1 << ntt_packed.MONT_BITS) - 1) << (i * slot_bits) for i in range(len(xs)))
    (row,) = ntt_packed.pack(iter(xs), len(xs), len(xs), slot_bytes)
    out = ntt_packed.unpack([ntt_packed.redc(row * ntt_packed.to_mont(twiddle), lo)], len(xs), slot_bytes)
    for x, got in zip(xs, out):
        assert got % R == x * twiddle % R
        assert got < 2 * R  # inputs below p give the textbook Montgomery bound


def test_to_mont_and_pinv_are_montgomery_constants():
    assert ntt_packed.PINV * R % (1 << ntt_packed.MONT_BITS) == (1 << ntt_packed.MONT_BITS) - 1
    assert ntt_packed.to_mont(1) == (1 << 256) % R
    assert ntt_packed.to_mont(0) == 0


@pytest.mark.parametrize("log_n", [0, 1, 2, 5, 10, 16, 24, 32])
def test_slots_are_wide_enough_for_the_simulated_bounds(log_n):
    n = 1 << log_n
    n1 = 1 << ((log_n + 1) // 2)
    _, _, widest, out_bound = ntt_packed._simulate(n1, n // n1)
    slot_bits = 8 * ((widest.bit_length() + 8) // 8)
    assert widest < 1 << slot_bits and out_bound <= widest


def test_plan_splits_into_rows_and_columns():
    pl = ntt_packed.plan(1 << 7, False)
    assert (pl.n1, pl.n2) == (16, 8)
    assert len(pl.bit_masks) == 2 and pl.chunk == 4 and len(pl.twist) == 16


@pytest.mark.parametrize("n", [8, 128, 1024])
def test_largest_inputs_do_not_overflow_slots(n):
    """All inputs p - 1 drive the lazy bounds to their maximum; any slot spill shows up here."""
    values = [R - 1] * n
    for inverse in (False, True):
        for coset in (False, True):
            assert ntt.ntt(values, inverse=inverse, coset=coset) == field.reference_ntt(
                values, inverse=inverse, coset=coset
            )


def test_odd_log_sizes_match_the_naive_dft():
    for n in (2, 8, 32, 512):
        values = [random.Random(n).randrange(R) for _ in range(n)]
        assert ntt.ntt(values) == field.naive_dft(values, field.root_of_unity(n))
