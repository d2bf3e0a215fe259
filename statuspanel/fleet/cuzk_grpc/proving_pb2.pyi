from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ("gpus", "loaded_srs", "queues", "total_proofs_completed", "total_proofs_failed", "uptime_seconds", "pinned_memory_bytes", "pinned_memory_limit_bytes")
    GPUS_FIELD_NUMBER: _ClassVar[int]
    LOADED_SRS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PROOFS_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PROOFS_FAILED_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PINNED_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    PINNED_MEMORY_LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    gpus: _containers.RepeatedCompositeFieldContainer[GPUStatus]
    loaded_srs: _containers.RepeatedCompositeFieldContainer[SRSStatus]
    queues: _containers.RepeatedCompositeFieldContainer[QueueStatus]
    total_proofs_completed: int
    total_proofs_failed: int
    uptime_seconds: int
    pinned_memory_bytes: int
    pinned_memory_limit_bytes: int
    def __init__(self, gpus: _Optional[_Iterable[_Union[GPUStatus, _Mapping]]] = ..., loaded_srs: _Optional[_Iterable[_Union[SRSStatus, _Mapping]]] = ..., queues: _Optional[_Iterable[_Union[QueueStatus, _Mapping]]] = ..., total_proofs_completed: _Optional[int] = ..., total_proofs_failed: _Optional[int] = ..., uptime_seconds: _Optional[int] = ..., pinned_memory_bytes: _Optional[int] = ..., pinned_memory_limit_bytes: _Optional[int] = ...) -> None: ...

class GPUStatus(_message.Message):
    __slots__ = ("ordinal", "name", "vram_total_bytes", "vram_free_bytes", "current_job_id", "current_proof_kind")
    ORDINAL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VRAM_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    VRAM_FREE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CURRENT_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_PROOF_KIND_FIELD_NUMBER: _ClassVar[int]
    ordinal: int
    name: str
    vram_total_bytes: int
    vram_free_bytes: int
    current_job_id: str
    current_proof_kind: str
    def __init__(self, ordinal: _Optional[int] = ..., name: _Optional[str] = ..., vram_total_bytes: _Optional[int] = ..., vram_free_bytes: _Optional[int] = ..., current_job_id: _Optional[str] = ..., current_proof_kind: _Optional[str] = ...) -> None: ...

class SRSStatus(_message.Message):
    __slots__ = ("circuit_id", "tier", "size_bytes", "ref_count")
    class Tier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        HOT: _ClassVar[SRSStatus.Tier]
        WARM: _ClassVar[SRSStatus.Tier]
        COLD: _ClassVar[SRSStatus.Tier]
    HOT: SRSStatus.Tier
    WARM: SRSStatus.Tier
    COLD: SRSStatus.Tier
    CIRCUIT_ID_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    REF_COUNT_FIELD_NUMBER: _ClassVar[int]
    circuit_id: str
    tier: SRSStatus.Tier
    size_bytes: int
    ref_count: int
    def __init__(self, circuit_id: _Optional[str] = ..., tier: _Optional[_Union[SRSStatus.Tier, str]] = ..., size_bytes: _Optional[int] = ..., ref_count: _Optional[int] = ...) -> None: ...

class QueueStatus(_message.Message):
    __slots__ = ("proof_kind", "pending", "in_progress")
    PROOF_KIND_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    proof_kind: str
    pending: int
    in_progress: int
    def __init__(self, proof_kind: _Optional[str] = ..., pending: _Optional[int] = ..., in_progress: _Optional[int] = ...) -> None: ...

class GetMetricsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetMetricsResponse(_message.Message):
    __slots__ = ("prometheus_text",)
    PROMETHEUS_TEXT_FIELD_NUMBER: _ClassVar[int]
    prometheus_text: str
    def __init__(self, prometheus_text: _Optional[str] = ...) -> None: ...
