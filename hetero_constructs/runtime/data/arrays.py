"""Batches as arrays plus JSON: describing them for the wire and rebuilding them in place.

A batch is a dict (string keys), a tuple or list, or a single array. Its arrays (numpy arrays,
CPU torch tensors, or buffers such as ``bytes`` and ``array.array``) travel as raw bytes,
described by dtype and shape; every other value must be JSON-able. numpy and torch are used
when present (found in ``sys.modules`` or imported on demand), never required: without them a
trainer receives shaped ``memoryview`` objects.
"""

from __future__ import annotations

import importlib
import math
import sys
from typing import Any

from .errors import DataPlaneError, ProtocolError

ALIGN = 64
"""Each array starts at a multiple of this many bytes in the payload (SIMD and cache lines)."""
MAX_ARRAYS = 4096
MAX_DIMS = 32

# dtype name -> (item size, struct format for memoryview.cast or "" when it has none).
DTYPES = {
    "bool": (1, "?"),
    "int8": (1, "b"),
    "uint8": (1, "B"),
    "int16": (2, "h"),
    "uint16": (2, "H"),
    "int32": (4, "i"),
    "uint32": (4, "I"),
    "int64": (8, "q"),
    "uint64": (8, "Q"),
    "float16": (2, ""),
    "bfloat16": (2, ""),
    "float32": (4, "f"),
    "float64": (8, "d"),
    "complex64": (8, ""),
    "complex128": (16, ""),
}
_FORMAT_DTYPES = {fmt: name for name, (_, fmt) in DTYPES.items() if fmt}
_FORMAT_DTYPES.update({"c": "uint8", "l": "int64", "L": "uint64"})
ARRAY_TYPES = ("auto", "numpy", "torch", "memoryview")


def optional_module(name: str) -> Any:
    """``name`` if it can be imported here, else ``None`` (numpy and torch are optional)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _present(name: str) -> Any:
    """``name`` only if the process already imported it (the batch cannot hold its type
    otherwise), without the cost of trying an import on every batch."""
    return sys.modules.get(name)


def _torch_dtype_name(tensor: Any) -> str:
    return str(tensor.dtype).rsplit(".", 1)[-1]


def _array_bytes(value: Any) -> tuple[str, list[int], str, memoryview] | None:
    """``(dtype, shape, kind, bytes view)`` of an array value, or ``None`` for other values."""
    numpy = _present("numpy")
    torch = _present("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        dtype = _torch_dtype_name(tensor)
        if dtype not in DTYPES:
            raise DataPlaneError(f"cannot send a torch tensor of dtype {dtype}")
        if numpy is None:
            numpy = optional_module("numpy")
        if numpy is None:
            raise DataPlaneError("sending torch tensors needs numpy on the data host")
        flat = tensor.reshape(-1).view(torch.uint8).numpy()
        return dtype, list(tensor.shape), "torch", memoryview(flat)
    if numpy is not None and isinstance(value, numpy.ndarray):
        dtype = value.dtype.name
        if dtype not in DTYPES or value.dtype.hasobject:
            raise DataPlaneError(f"cannot send a numpy array of dtype {value.dtype}")
        if value.dtype.byteorder == ">":
            value = value.astype(value.dtype.newbyteorder("<"))
        array = numpy.ascontiguousarray(value)
        return dtype, list(array.shape), "numpy", memoryview(array.reshape(-1).view(numpy.uint8))
    if isinstance(value, (bytes, bytearray)):
        return "uint8", [len(value)], "memoryview", memoryview(value)
    if isinstance(value, memoryview) or type(value).__name__ == "array":
        view = memoryview(value)
        name = _FORMAT_DTYPES.get(view.format.lstrip("@=<"))
        if name is None or not view.c_contiguous or DTYPES[name][0] != view.itemsize:
            raise DataPlaneError(f"cannot send a buffer of format {view.format!r}")
        return name, list(view.shape or ()), "memoryview", view.cast("B")
    return None


def describe(batch: Any) -> tuple[dict[str, Any], list[memoryview], int, int]:
    """The metadata, payload pieces, payload size and sample count of ``batch``.

    Pieces include zero padding so that each array starts at a multiple of ``ALIGN``. The
    sample count is the first dimension of the first array (1 for a scalar array, 0 without).
    """
    if isinstance(batch, dict):
        layout, pairs = "dict", list(batch.items())
        if not all(isinstance(key, str) for key in batch):
            raise DataPlaneError("a batch dict needs string keys")
    elif isinstance(batch, (tuple, list)):
        layout, pairs = type(batch).__name__, list(enumerate(batch))
    else:
        layout, pairs = "array", [(0, batch)]
    items: list[list[Any]] = []
    pieces: list[memoryview] = []
    offset, samples = 0, -1
    for key, value in pairs:
        described = _array_bytes(value)
        if described is None:
            if layout == "array":
                raise DataPlaneError(
                    f"a batch must be a dict, tuple or list of arrays, or an array; got "
                    f"{type(batch).__name__}"
                )
            items.append([key, "v", value])
            continue
        dtype, shape, kind, view = described
        padding = -offset % ALIGN
        if padding:
            pieces.append(memoryview(bytes(padding)))
            offset += padding
        items.append([key, "a", dtype, shape, offset, view.nbytes, kind])
        if view.nbytes:
            pieces.append(view)
        offset += view.nbytes
        if samples < 0:
            samples = shape[0] if shape else 1
    if len(items) > MAX_ARRAYS:
        raise DataPlaneError(f"a batch may hold at most {MAX_ARRAYS} values, got {len(items)}")
    return {"layout": layout, "items": items}, pieces, offset, max(samples, 0)


def _check_array(
    item: list[Any], payload_len: int, end: int
) -> tuple[Any, str, list[int], int, int, str]:
    if len(item) != 7:
        raise ProtocolError(f"malformed array description {item!r:.200}")
    key, _, dtype, shape, offset, nbytes, kind = item
    if dtype not in DTYPES:
        raise ProtocolError(f"unknown dtype {dtype!r:.50}")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_DIMS
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
    ):
        raise ProtocolError(f"malformed shape {shape!r:.200}")
    for number in (offset, nbytes):
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise ProtocolError(f"malformed array offset or size {item!r:.200}")
    if math.prod(shape) * DTYPES[dtype][0] != nbytes:
        raise ProtocolError(f"shape {shape} of {dtype} does not hold {nbytes} bytes")
    if offset < end or offset % ALIGN or offset + nbytes > payload_len:
        raise ProtocolError(f"array at offset {offset} (+{nbytes}) is outside the payload")
    return key, dtype, shape, offset, nbytes, str(kind)


class PayloadBuffer:
    """One batch's payload, allocated from the checked header and filled by ``recv_into``."""

    def __init__(self, nbytes: int, array_type: str) -> None:
        self.array_type = array_type
        # "auto" uses what the process has imported (importing torch here, in the reading
        # thread, would take seconds); RemoteBatches imports an explicit choice up front.
        find = _present if array_type == "auto" else optional_module
        self.numpy = find("numpy") if array_type != "memoryview" else None
        self.torch = find("torch") if array_type in ("auto", "torch") else None
        if array_type == "torch" and self.torch is None:
            raise DataPlaneError("array_type='torch' needs torch on the trainer")
        if array_type == "numpy" and self.numpy is None:
            raise DataPlaneError("array_type='numpy' needs numpy on the trainer")
        if self.numpy is not None:
            self.base: Any = self.numpy.empty(nbytes, dtype=self.numpy.uint8)
            self.view = memoryview(self.base)
        else:
            self.base = bytearray(nbytes)
            self.view = memoryview(self.base)

    def _array(self, dtype: str, shape: list[int], offset: int, nbytes: int, kind: str) -> Any:
        want = self.array_type
        if want == "auto":
            want = kind if kind in ("numpy", "torch") else "numpy"
            if want == "torch" and self.torch is None:
                want = "numpy"
            if want == "numpy" and self.numpy is None:
                want = "memoryview"
        if want == "torch":
            torch: Any = self.torch
            if self.numpy is not None:
                raw = torch.from_numpy(self.base[offset : offset + nbytes])
            else:
                raw = torch.frombuffer(self.base, dtype=torch.uint8, count=nbytes, offset=offset)
            return raw.view(getattr(torch, dtype)).reshape(shape)
        if want == "numpy":
            raw = self.base[offset : offset + nbytes]
            numpy_dtype = "uint16" if dtype == "bfloat16" else dtype
            return raw.view(numpy_dtype).reshape(shape)
        view = memoryview(self.base)[offset : offset + nbytes]
        fmt = DTYPES[dtype][1]
        if not fmt or not nbytes or not shape:
            return view
        return view.cast(fmt, shape)  # type: ignore[call-overload]

    def build(self, meta: dict[str, Any], payload_len: int) -> Any:
        """The batch that ``meta`` describes, as views into this buffer (no copies)."""
        items = meta.get("items")
        layout = meta.get("layout")
        if (
            not isinstance(items, list)
            or len(items) > MAX_ARRAYS
            or layout
            not in (
                "dict",
                "tuple",
                "list",
                "array",
            )
        ):
            raise ProtocolError("malformed batch description")
        values: list[tuple[Any, Any]] = []
        end = 0
        for item in items:
            if not isinstance(item, list) or len(item) < 3 or item[1] not in ("a", "v"):
                raise ProtocolError(f"malformed batch item {item!r:.200}")
            if item[1] == "v":
                values.append((item[0], item[2]))
                continue
            key, dtype, shape, offset, nbytes, kind = _check_array(item, payload_len, end)
            end = offset + nbytes
            values.append((key, self._array(dtype, shape, offset, nbytes, kind)))
        if layout == "dict":
            if not all(isinstance(key, str) for key, _ in values):
                raise ProtocolError("a dict batch needs string keys")
            return dict(values)
        if layout == "array":
            if len(values) != 1:
                raise ProtocolError("an array batch holds one array")
            return values[0][1]
        ordered = [value for _, value in values]
        return tuple(ordered) if layout == "tuple" else ordered


__all__ = [
    "ALIGN",
    "ARRAY_TYPES",
    "DTYPES",
    "MAX_ARRAYS",
    "PayloadBuffer",
    "describe",
    "optional_module",
]
