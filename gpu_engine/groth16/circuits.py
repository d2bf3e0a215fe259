"""One circuit per proof kind: scaled-down stand-ins for Filecoin's, built from MiMC.

Every partition is its own statement: its secret data, tree and challenges are derived
from sha256(kind, job id, partition index), so public inputs differ per partition. The
prover knows the private data (leaves, Merkle siblings) behind the public roots, as the
real prover knows its sector. `scale` multiplies the number of challenges (sectors
for window-post), i.e. the constraint count, without changing the statement's form.

- winning-post: one sector, `scale` challenges; leaf = H(data, index) under comm_r.
- window-post: 2*scale sectors, one challenge each; public: each sector's comm_r and index.
- porep-c2: `scale` challenges of a replica; label = H(H(data, replica_id), index) (two
  labelling layers) under comm_r; public: replica_id, comm_r, indices.
- snap-update: `scale` challenges; old leaf under comm_r_old, new leaf = old + H(rho, index)
  under comm_r_new with the same path; public: comm_r_old, comm_r_new, rho, indices.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field

from gpu_engine.groth16.field import R
from gpu_engine.groth16.mimc import MerkleTree, bits_gadget, compress_gadget, merkle_root_gadget, mimc_compress
from gpu_engine.groth16.r1cs import LC, ONE, ConstraintSystem
from gpu_engine.kinds import get_kind

TREE_DEPTH = {"winning-post": 2, "window-post": 2, "porep-c2": 3, "snap-update": 2}
SHAPE_JOB_ID = "__shape__"  # the dummy statement the setup synthesizes (shape only)


@dataclass
class Witness:
    """A synthesized partition: plain, picklable data (crosses the process-pool boundary).

    `assignment` is the whole z = [1, public inputs..., private...]; `a`, `b`, `c` are
    <A_i,z>, <B_i,z>, <C_i,z> per constraint (the evaluations the prover interpolates)."""

    kind: str
    job_id: str
    index: int
    scale: int
    public_inputs: list[int]
    assignment: list[int]
    synth_ms: float
    a: list[int] = field(repr=False, default_factory=list)
    b: list[int] = field(repr=False, default_factory=list)
    c: list[int] = field(repr=False, default_factory=list)

    @property
    def num_constraints(self) -> int:
        return len(self.a)


class _Derive:
    """Deterministic field elements for one partition's statement."""

    def __init__(self, kind: str, job_id: str, index: int) -> None:
        self.seed = hashlib.sha256(f"{kind}\x00{job_id}\x00{index}".encode()).digest()

    def fe(self, *label: object) -> int:
        msg = self.seed + "/".join(map(str, label)).encode()
        return int.from_bytes(hashlib.sha512(msg).digest(), "big") % R

    def index(self, depth: int, *label: object) -> int:
        return self.fe(*label) % (1 << depth)


def _check_scale(scale: int) -> int:
    if not isinstance(scale, int) or isinstance(scale, bool) or scale < 1:
        raise ValueError(f"circuit scale must be a positive integer, got {scale!r}")
    return scale


def _inclusion(cs: ConstraintSystem, leaf: LC, index: LC, siblings: list[int], root: LC, depth: int, name: str) -> None:
    bits = bits_gadget(cs, index, depth, f"{name} index")
    sib = [cs.alloc(s) for s in siblings]
    computed = merkle_root_gadget(cs, leaf, bits, sib, f"{name} path")
    cs.enforce(computed, LC.var(ONE), root, f"{name}: root matches")


def _winning_or_window(cs: ConstraintSystem, d: _Derive, sectors: int, challenges: int, depth: int) -> None:
    trees, picks = [], []
    for s in range(sectors):
        data = [d.fe("data", s, i) for i in range(1 << depth)]
        leaves = [mimc_compress(x, i) for i, x in enumerate(data)]
        trees.append((data, MerkleTree(leaves)))
        picks.append([d.index(depth, "challenge", s, k) for k in range(challenges)])
    pub = [(cs.alloc_public(t.root), [cs.alloc_public(i) for i in p]) for (_, t), p in zip(trees, picks)]
    for s, ((data, tree), (root, idx_vars)) in enumerate(zip(trees, pub)):
        for k, (i, idx) in enumerate(zip(picks[s], idx_vars)):
            leaf = compress_gadget(cs, cs.alloc(data[i]), idx, f"sector {s} challenge {k} leaf")
            _inclusion(cs, leaf, idx, tree.path(i), root, depth, f"sector {s} challenge {k}")


def _porep(cs: ConstraintSystem, d: _Derive, challenges: int, depth: int) -> None:
    replica_id = d.fe("replica_id")
    data = [d.fe("data", i) for i in range(1 << depth)]
    labels = [mimc_compress(mimc_compress(x, replica_id), i) for i, x in enumerate(data)]
    tree = MerkleTree(labels)
    picks = [d.index(depth, "challenge", k) for k in range(challenges)]
    rid = cs.alloc_public(replica_id)
    root = cs.alloc_public(tree.root)
    idx_vars = [cs.alloc_public(i) for i in picks]
    for k, (i, idx) in enumerate(zip(picks, idx_vars)):
        layer1 = compress_gadget(cs, cs.alloc(data[i]), rid, f"challenge {k} label layer 1")
        label = compress_gadget(cs, layer1, idx, f"challenge {k} label layer 2")
        _inclusion(cs, label, idx, tree.path(i), root, depth, f"challenge {k}")


def _snap(cs: ConstraintSystem, d: _Derive, challenges: int, depth: int) -> None:
    rho = d.fe("rho")
    old = [d.fe("old", i) for i in range(1 << depth)]
    new = [(o + mimc_compress(rho, i)) % R for i, o in enumerate(old)]
    t_old, t_new = MerkleTree(old), MerkleTree(new)
    picks = [d.index(depth, "challenge", k) for k in range(challenges)]
    r_old, r_new, rho_v = cs.alloc_public(t_old.root), cs.alloc_public(t_new.root), cs.alloc_public(rho)
    idx_vars = [cs.alloc_public(i) for i in picks]
    for k, (i, idx) in enumerate(zip(picks, idx_vars)):
        old_leaf = cs.alloc(old[i])
        _inclusion(cs, old_leaf, idx, t_old.path(i), r_old, depth, f"challenge {k} old")
        key = compress_gadget(cs, rho_v, idx, f"challenge {k} encoding key")
        _inclusion(cs, old_leaf + key, idx, t_new.path(i), r_new, depth, f"challenge {k} new")


def build(kind: str, job_id: str, index: int, scale: int = 1, *, record: bool = False) -> ConstraintSystem:
    """Run the circuit of `kind` for one partition; a finished ConstraintSystem."""
    spec = get_kind(kind)
    _check_scale(scale)
    if not isinstance(index, int) or not 0 <= index < spec.partitions:
        raise ValueError(f"partition index {index!r} out of range for {kind} ({spec.partitions} partitions)")
    d = _Derive(kind, job_id, index)
    cs = ConstraintSystem(record=record)
    depth = TREE_DEPTH[kind]
    if kind == "winning-post":
        _winning_or_window(cs, d, sectors=1, challenges=scale, depth=depth)
    elif kind == "window-post":
        _winning_or_window(cs, d, sectors=2 * scale, challenges=1, depth=depth)
    elif kind == "porep-c2":
        _porep(cs, d, challenges=scale, depth=depth)
    elif kind == "snap-update":
        _snap(cs, d, challenges=scale, depth=depth)
    else:  # a kind added to kinds.py without a circuit
        raise ValueError(f"no circuit for proof kind {kind!r}")
    cs.finish()
    return cs


def synthesize(kind: str, job_id: str, index: int, scale: int = 1) -> Witness:
    """Witness for one partition, every constraint checked (UnsatisfiedConstraint names a failure)."""
    t0 = time.perf_counter()
    cs = build(kind, str(job_id), index, scale)
    ms = (time.perf_counter() - t0) * 1000.0
    return Witness(kind, str(job_id), index, scale, cs.public_inputs, cs.values, ms, cs.a, cs.b, cs.c)
