"""cuzk's gRPC status API (`cuzk.v1.ProvingEngine`), which a cuzk daemon always serves (its HTTP
status only when `status_listen` is set): the project's own `proving.proto`, the modules generated
from it, the channel that calls it (directly, with TLS when asked, or through the source's SSH
connection) and the adapter to the panel's snapshot.

The generated modules are committed (so nothing is generated at install time); regenerate them
after editing the `.proto`, from the repository root, with the pinned grpcio-tools:

    python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. --grpc_python_out=. \\
        statuspanel/fleet/cuzk_grpc/proving.proto

`tests/fleet/test_grpc_stubs_regenerate.py` fails when they no longer match the `.proto`.
grpcio is imported only when a gRPC source is polled (`proto()`), so processes without one never
load it.
"""
from __future__ import annotations

from types import ModuleType

PROTO_FILE = "statuspanel/fleet/cuzk_grpc/proving.proto"
SERVICE = "cuzk.v1.ProvingEngine"


def proto() -> tuple[ModuleType, ModuleType, ModuleType]:
    """(grpc, proving_pb2, proving_pb2_grpc), with a clear message when grpcio is missing."""
    try:
        import grpc

        from statuspanel.fleet.cuzk_grpc import proving_pb2, proving_pb2_grpc
    except ImportError as exc:  # a declared dependency; a broken install says what to do
        raise ImportError(f"a cuzk gRPC source needs grpcio and protobuf ({exc}); "
                          "reinstall the project: pip install -e .") from exc
    return grpc, proving_pb2, proving_pb2_grpc
