"""The circom area: the project's test circuits compiled for BLS12-381 with the pinned circom,
their Groth16 keys from a small powers of tau, and the snarkjs helpers (tests/circom/tools.py).

The first run compiles and runs the ceremony (about a minute and a half here); later runs read
`.cache/circom-fixtures/` at the repository root. Without node or npm every test here skips,
saying why.
"""
from __future__ import annotations

import pytest

from tests.circom import tools

# 2^10 rows hold every test circuit (the largest, Poseidon, needs 608 with its public rows).
FIXTURE_POWER = 10


@pytest.fixture(scope="session")
def circom_tools() -> None:
    """Node tools installed from the lock file, or the test skipped with the reason."""
    reason = tools.unavailable_reason()
    if reason:
        pytest.skip(reason)
    tools.ensure_node_tools()


def _circuit(name: str) -> tools.CircuitFiles:
    return tools.build_circuit(tools.CIRCUITS_DIR / f"{name}.circom", power=FIXTURE_POWER)


@pytest.fixture(scope="session")
def multiplier_circuit(circom_tools) -> tools.CircuitFiles:
    """A 64-link multiplier chain; public signals [out, b], private a."""
    return _circuit("multiplier")


@pytest.fixture(scope="session")
def multi_public_circuit(circom_tools) -> tools.CircuitFiles:
    """Public inputs x[3] and k, outputs total and blinded, private secret that must be non-zero."""
    return _circuit("multi_public")


@pytest.fixture(scope="session")
def poseidon_circuit(circom_tools) -> tools.CircuitFiles:
    """circomlib's Poseidon(3) over a private preimage and a public domain tag."""
    return _circuit("poseidon")


@pytest.fixture(scope="session", params=["multiplier", "multi_public", "poseidon"])
def any_circuit(request, circom_tools) -> tools.CircuitFiles:
    """Each test circuit in turn."""
    return _circuit(request.param)
