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

from .errors import BatchRefused, DataPlaneError, ProtocolError

ALIGN = 64
"""Each array starts at a multiple of this many bytes in the payload (SIMD and cache lines)."""
MAX_ARRAYS = 4096
MAX_DIMS = 32
MAX_JSON_DEPTH = 64
"""Nesting of a batch's JSON values (lists in dicts in lists ...) the sender accepts."""

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
            raise BatchRefused(f"cannot send a torch tensor of dtype {dtype}")
        if numpy is None:
            numpy = optional_module("numpy")
        if numpy is None:
            raise DataPlaneError("sending torch tensors needs numpy on the data host")
        flat = tensor.reshape(-1).view(torch.uint8).numpy()
        return dtype, list(tensor.shape), "torch", memoryview(flat)
    if numpy is not None and isinstance(value, numpy.ndarray):
        dtype = value.dtype.name
        if dtype not in DTYPES or value.dtype.hasobject:
            raise BatchRefused(f"cannot send a numpy array of dtype {value.dtype}")
        if value.dtype.byteorder == ">":
            value = value.astype(value.dtype.newbyteorder("<"))
        # Not ascontiguousarray: it makes a 0-d array 1-d.
        array = value if value.flags.c_contiguous else value.copy(order="C")
        return dtype, list(array.shape), "numpy", memoryview(array.reshape(-1).view(numpy.uint8))
    if isinstance(value, (bytes, bytearray)):
        return "uint8", [len(value)], "memoryview", memoryview(value)
    if isinstance(value, memoryview) or type(value).__name__ == "array":
        view = memoryview(value)
        name = _FORMAT_DTYPES.get(view.format.lstrip("@=<"))
        if name is None or not view.c_contiguous or DTYPES[name][0] != view.itemsize:
            raise BatchRefused(f"cannot send a buffer of format {view.format!r}")
        return name, list(view.shape or ()), "memoryview", view.cast("B")
    return None


def _where(layout: str, key: Any) -> str:
    if layout == "array":
        return "batch"
    return f"batch[{key!r}]" if layout == "dict" else f"batch[{key}]"


def check_json(value: Any, path: str, depth: int = 0) -> None:
    """Refuse a JSON value that would not arrive exactly as it is (JSON turns ``{1: x}`` into
    ``{"1": x}`` and tuples into lists, and has no NaN), naming where it is and the fix."""
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return
    if kind is float:
        if not math.isfinite(value):
            raise BatchRefused(
                f"{path} is {value!r}: JSON values cannot be NaN or infinite. Fix: send it in "
                "a numpy array (arrays keep every float)"
            )
        return
    if depth >= MAX_JSON_DEPTH:
        raise BatchRefused(f"{path} nests deeper than {MAX_JSON_DEPTH} levels")
    if kind is list:
        for index, item in enumerate(value):
            check_json(item, f"{path}[{index}]", depth + 1)
        return
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise BatchRefused(
                    f"{path} has the key {key!r} ({type(key).__name__}): JSON values only keep "
                    f"string keys (it would arrive as {str(key)!r}). Fix: use string keys"
                )
            check_json(item, f"{path}[{key!r}]", depth + 1)
        return
    fix = {
        tuple: "use a list (JSON values arrive as lists), or put the numbers in an array",
    }.get(
        kind,
        "arrays travel only at the top level of a batch; other values must be None, "
        "bool, int, float, str, list or dict (use .item() for a numpy scalar)",
    )
    raise BatchRefused(
        f"{path} is a {kind.__module__}.{kind.__qualname__}, which would not arrive as it is. "
        f"Fix: {fix}"
    )


def describe(batch: Any) -> tuple[dict[str, Any], list[memoryview], int, int]:
    """The metadata, payload pieces, payload size and sample count of ``batch``.

    Pieces include zero padding so that each array starts at a multiple of ``ALIGN``. The
    sample count is the first dimension of the first array (1 for a scalar array, 0 without).
    Raises :class:`BatchRefused` for what would not arrive exactly as it is.
    """
    if isinstance(batch, dict):
        layout, pairs = "dict", list(batch.items())
        if type(batch) is not dict:
            raise BatchRefused(
                f"a batch of type {type(batch).__name__} would arrive as a plain dict. "
                "Fix: yield dict(batch)"
            )
        for key in batch:
            if type(key) is not str:
                raise BatchRefused(
                    f"a batch dict needs string keys; it has {key!r} ({type(key).__name__})"
                )
    elif isinstance(batch, (tuple, list)):
        layout = "tuple" if isinstance(batch, tuple) else "list"
        pairs = list(enumerate(batch))
        if type(batch) not in (tuple, list):
            raise BatchRefused(
                f"a batch of type {type(batch).__name__} would arrive as a plain "
                f"{layout}. Fix: yield {layout}(batch), or a dict"
            )
    else:
        layout, pairs = "array", [(0, batch)]
    if len(pairs) > MAX_ARRAYS:
        raise BatchRefused(f"a batch may hold at most {MAX_ARRAYS} values, got {len(pairs)}")
    items: list[list[Any]] = []
    pieces: list[memoryview] = []
    offset, samples = 0, -1
    for key, value in pairs:
        described = _array_bytes(value)
        if described is None:
            if layout == "array":
                raise BatchRefused(
                    f"a batch must be a dict, tuple or list of arrays, or an array; got "
                    f"{type(batch).__name__}"
                )
            check_json(value, _where(layout, key))
            items.append([key, "v", value])
            continue
        dtype, shape, kind, view = described
        if len(shape) > MAX_DIMS:
            raise BatchRefused(
                f"{_where(layout, key)} has {len(shape)} dimensions; at most {MAX_DIMS} travel"
            )
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
            return raw.view(getattr(torch, dtype)).reshape(tuple(shape))
        if want == "numpy":
            raw = self.base[offset : offset + nbytes]
            numpy_dtype = "uint16" if dtype == "bfloat16" else dtype
            return raw.view(numpy_dtype).reshape(tuple(shape))
        view = memoryview(self.base)[offset : offset + nbytes]
        fmt = DTYPES[dtype][1]
        if not fmt or not nbytes:
            return view  # memoryview has no format for this dtype (or no bytes to cast)
        return view.cast(fmt, tuple(shape))  # type: ignore[call-overload]

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
    "MAX_JSON_DEPTH",
    "PayloadBuffer",
    "check_json",
    "describe",
    "optional_module",
]
