"""R1CS builder, MiMC gadgets and the per-kind circuits (no group operations)."""
from __future__ import annotations

import pickle

import pytest

from gpu_engine.groth16 import circuits, mimc
from gpu_engine.groth16.field import R
from gpu_engine.groth16.r1cs import LC, ONE, ConstraintSystem, UnsatisfiedConstraint
from gpu_engine.kinds import PROOF_KINDS


def test_lc_arithmetic_cancels_and_reduces():
    x = LC.var(3)
    assert (x + x - x.scale(2)).terms == {}
    assert (x + 5 - 5).terms == {3: 1}
    assert (1 - x).terms == {ONE: 1, 3: R - 1}


def test_unsatisfied_constraint_names_it():
    cs = ConstraintSystem()
    x = cs.alloc(3)
    y = cs.alloc(10)
    cs.enforce(x, x, LC.const(9), "x squared is nine")
    with pytest.raises(UnsatisfiedConstraint, match=r"constraint #1 'y is x squared'") as info:
        cs.enforce(x, x, y, "y is x squared")
    assert info.value.index == 1 and info.value.name == "y is x squared"


def test_tampered_value_inside_the_hash_gadget_is_caught_at_its_round():
    cs = ConstraintSystem()
    left, right = cs.alloc(11), cs.alloc(22)
    real_alloc = cs.alloc
    calls = []

    def faulty_alloc(value):
        calls.append(value)
        return real_alloc(value + 1 if len(calls) == 7 else value)  # 3 per round: the 7th is round 2 t^2

    cs.alloc = faulty_alloc
    with pytest.raises(UnsatisfiedConstraint, match=r"'h: round 2 square'"):
        mimc.compress_gadget(cs, left, right, "h")


def test_public_inputs_come_before_private_variables():
    cs = ConstraintSystem()
    cs.alloc(1)
    with pytest.raises(RuntimeError, match="before private"):
        cs.alloc_public(2)


def test_compress_gadget_matches_native_and_costs_what_it_says():
    cs = ConstraintSystem()
    out = mimc.compress_gadget(cs, cs.alloc(5), cs.alloc(7), "h")
    assert cs.value(out) == mimc.mimc_compress(5, 7)
    assert len(cs.a) == mimc.CONSTRAINTS_PER_HASH


def test_merkle_gadget_recomputes_the_native_root():
    tree = mimc.MerkleTree([10, 20, 30, 40, 50, 60, 70, 80])
    for index in (0, 5, 7):
        cs = ConstraintSystem()
        idx = cs.alloc(index)
        bits = mimc.bits_gadget(cs, idx, tree.depth, "i")
        root = mimc.merkle_root_gadget(cs, cs.alloc(tree.levels[0][index]), bits, [cs.alloc(s) for s in tree.path(index)], "p")
        assert cs.value(root) == tree.root


def test_a_wrong_sibling_gives_another_root():
    tree = mimc.MerkleTree([1, 2, 3, 4])
    cs = ConstraintSystem()
    bits = mimc.bits_gadget(cs, cs.alloc(2), 2, "i")
    path = tree.path(2)
    root = mimc.merkle_root_gadget(cs, cs.alloc(3), bits, [cs.alloc(path[0] + 1), cs.alloc(path[1])], "p")
    assert cs.value(root) != tree.root


def test_bits_gadget_refuses_an_index_too_large():
    cs = ConstraintSystem()
    with pytest.raises(UnsatisfiedConstraint, match="bits recompose"):
        mimc.bits_gadget(cs, cs.alloc(9), 3, "i")


@pytest.mark.parametrize("kind", sorted(PROOF_KINDS))
def test_each_partition_is_a_distinct_statement_of_one_shape(kind):
    w0 = circuits.synthesize(kind, "job-a", 0)
    w1 = circuits.synthesize(kind, "job-b", 0)
    assert w0.public_inputs != w1.public_inputs
    if PROOF_KINDS[kind].partitions > 1:
        assert circuits.synthesize(kind, "job-a", 1).public_inputs != w0.public_inputs
    assert circuits.synthesize(kind, "job-a", 0).public_inputs == w0.public_inputs  # deterministic
    m0 = circuits.build(kind, "job-a", 0, record=True).matrices()
    m1 = circuits.build(kind, "job-b", 0, record=True).matrices()
    assert m0.digest(kind) == m1.digest(kind)
    assert len(w0.assignment) == m0.num_vars and w0.num_constraints == m0.num_constraints
    assert pickle.loads(pickle.dumps(w0)) == w0


def test_scale_multiplies_the_constraints():
    small = circuits.synthesize("winning-post", "j", 0, 1).num_constraints
    big = circuits.synthesize("winning-post", "j", 0, 3).num_constraints
    assert 2.5 * small < big < 3.5 * small


@pytest.mark.parametrize(
    "args, message",
    [(("no-such-kind", "j", 0, 1), "unknown proof kind"),
     (("porep-c2", "j", 10, 1), "out of range"),
     (("winning-post", "j", 0, 0), "positive integer")],
)
def test_bad_arguments_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        circuits.synthesize(*args)
