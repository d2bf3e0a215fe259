"""The committed gRPC modules are what the project's .proto generates (regenerated here with the
pinned grpcio-tools and compared byte for byte), and the .proto keeps cuzk's wire contract: the
package, service, method paths, message names, field numbers and types a cuzk daemon uses."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path("statuspanel/fleet/cuzk_grpc")
GENERATED = ("proving_pb2.py", "proving_pb2.pyi", "proving_pb2_grpc.py")

# cuzk.v1's messages as a cuzk daemon defines them: (field, number, type, repeated).
WIRE = {
    "GetStatusResponse": [("gpus", 1, "GPUStatus", True), ("loaded_srs", 2, "SRSStatus", True),
                          ("queues", 3, "QueueStatus", True), ("total_proofs_completed", 4, "uint64", False),
                          ("total_proofs_failed", 5, "uint64", False), ("uptime_seconds", 6, "uint64", False),
                          ("pinned_memory_bytes", 7, "uint64", False), ("pinned_memory_limit_bytes", 8, "uint64", False)],
    "GPUStatus": [("ordinal", 1, "uint32", False), ("name", 2, "string", False), ("vram_total_bytes", 3, "uint64", False),
                  ("vram_free_bytes", 4, "uint64", False), ("current_job_id", 5, "string", False),
                  ("current_proof_kind", 6, "string", False)],
    "SRSStatus": [("circuit_id", 1, "string", False), ("tier", 2, "Tier", False), ("size_bytes", 3, "uint64", False),
                  ("ref_count", 4, "uint32", False)],
    "QueueStatus": [("proof_kind", 1, "string", False), ("pending", 2, "uint32", False),
                    ("in_progress", 3, "uint32", False)],
    "GetMetricsResponse": [("prometheus_text", 1, "string", False)],
    "GetStatusRequest": [],
    "GetMetricsRequest": [],
}


def test_regenerating_the_modules_gives_the_committed_files(tmp_path) -> None:
    pytest.importorskip("grpc_tools", reason="grpcio-tools (the test extra) regenerates the modules")
    work = tmp_path / "src"
    (work / PACKAGE).mkdir(parents=True)
    shutil.copy(ROOT / PACKAGE / "proving.proto", work / PACKAGE / "proving.proto")
    done = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I.", "--python_out=.", "--pyi_out=.",
                           "--grpc_python_out=.", str(PACKAGE / "proving.proto")], cwd=work, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in GENERATED:
        fresh, committed = (work / PACKAGE / name).read_text(), (ROOT / PACKAGE / name).read_text()
        assert fresh == committed, f"{PACKAGE / name} is stale: regenerate it (statuspanel/fleet/cuzk_grpc/__init__.py)"


def test_the_proto_keeps_cuzks_wire_contract() -> None:
    from google.protobuf.descriptor import FieldDescriptor

    from statuspanel.fleet.cuzk_grpc import proving_pb2 as pb

    names = {v: k[5:].lower() for k, v in vars(FieldDescriptor).items() if k.startswith("TYPE_")}
    assert pb.DESCRIPTOR.package == "cuzk.v1"
    service = pb.DESCRIPTOR.services_by_name["ProvingEngine"]
    assert {m.name: (m.input_type.name, m.output_type.name) for m in service.methods} == {
        "GetStatus": ("GetStatusRequest", "GetStatusResponse"), "GetMetrics": ("GetMetricsRequest", "GetMetricsResponse")}
    for message, fields in WIRE.items():
        desc = pb.DESCRIPTOR.message_types_by_name[message]
        got = [(f.name, f.number, f.message_type.name if f.message_type else f.enum_type.name if f.enum_type
                else names[f.type], f.is_repeated) for f in desc.fields]
        assert got == fields, message
    tiers = pb.SRSStatus.Tier
    assert (tiers.Value("HOT"), tiers.Value("WARM"), tiers.Value("COLD")) == (0, 1, 2)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def test_a_message_from_the_daemons_field_numbers_decodes() -> None:
    """Bytes written from the field numbers alone (as another implementation writes them) decode."""
    from statuspanel.fleet.cuzk_grpc import proving_pb2 as pb

    name = b"NVIDIA RTX 6000 Ada Generation"
    gpu = _int(1, 1) + _bytes(2, name) + _int(3, 48 << 30) + _int(4, 40 << 30) + _bytes(5, b"j-1")
    srs = _bytes(1, b"wpost-32g") + _int(2, 2)
    queue = _bytes(1, b"window-post") + _int(2, 4) + _int(3, 1)
    body = (_bytes(1, gpu) + _bytes(2, srs) + _bytes(3, queue) + _int(4, 7) + _int(6, 3600)
            + _int(127, 1))  # a field this .proto does not know: ignored
    status = pb.GetStatusResponse.FromString(body)
    assert (status.gpus[0].ordinal, status.gpus[0].name, status.gpus[0].vram_total_bytes) == (1, name.decode(), 48 << 30)
    assert status.gpus[0].vram_free_bytes == 40 << 30 and status.gpus[0].current_job_id == "j-1"
    assert status.loaded_srs[0].circuit_id == "wpost-32g" and status.loaded_srs[0].tier == pb.SRSStatus.COLD
    assert (status.queues[0].proof_kind, status.queues[0].pending, status.queues[0].in_progress) == ("window-post", 4, 1)
    assert (status.total_proofs_completed, status.uptime_seconds) == (7, 3600)
