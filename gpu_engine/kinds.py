"""Proof kinds: the one table every part of the product reads (partitions, priority, labels)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class ProofKind:
    name: str          # wire name, e.g. "snap-update"
    label: str         # full human label, never shortened
    partitions: int
    priority: int      # higher is claimed first
    priority_label: str


PRIORITY_NORMAL = 10
PRIORITY_HIGH = 20
PRIORITY_CRITICAL = 30

PROOF_KINDS: dict[str, ProofKind] = {
    k.name: k
    for k in (
        ProofKind("porep-c2", "PoRep Commit 2 (SealCommit)", 10, PRIORITY_NORMAL, "normal"),
        ProofKind("snap-update", "SnapDeals Update (ReplicaUpdate)", 16, PRIORITY_NORMAL, "normal"),
        ProofKind("window-post", "Window PoSt", 1, PRIORITY_HIGH, "high"),
        ProofKind("winning-post", "Winning PoSt", 1, PRIORITY_CRITICAL, "critical"),
    )
}


def get_kind(name: str) -> ProofKind:
    """The kind called `name`, or a ValueError that lists the valid ones."""
    try:
        return PROOF_KINDS[name]
    except KeyError:
        raise ValueError(f"unknown proof kind {name!r}; valid kinds: {', '.join(PROOF_KINDS)}") from None


# Labels of kinds registered at run time (circom circuits): set by the app once Django is ready,
# so this module stays free of Django for the pool children that import it.
_label_source: Callable[[str], str | None] | None = None


def set_label_source(source: Callable[[str], str | None] | None) -> None:
    global _label_source
    _label_source = source


def kind_label(name: str) -> str:
    kind = PROOF_KINDS.get(name)
    if kind:
        return kind.label
    if _label_source is not None:
        label = _label_source(name)
        if label:
            return label
    return name
