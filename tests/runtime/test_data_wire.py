"""The data plane's batch format: what crosses the wire, and what a hostile description gets."""

from __future__ import annotations

import functools
import json
import shutil
import socket
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

import hetero_constructs.runtime as runtime_package
from hetero_constructs.runtime.data import BatchRefused, DataPlaneError, ProtocolError, wire
from hetero_constructs.runtime.data.arrays import PayloadBuffer, describe


def round_trip(batch: Any, array_type: str = "auto") -> Any:
    meta, pieces, size, _ = describe(batch)
    buffer = PayloadBuffer(size, array_type)
    buffer.view[:] = b"".join(bytes(piece) for piece in pieces)
    return buffer.build(json.loads(json.dumps(meta)), size)


def test_arrays_keep_dtype_shape_and_values_and_big_endian_is_made_little() -> None:
    batch = {
        "a": np.arange(6, dtype=">i4").reshape(2, 3),
        "b": np.arange(5, dtype=np.float64)[::2],  # not contiguous
        "c": np.zeros((0, 3), np.uint8),
        "d": [1, "two", None],
    }
    out = round_trip(batch)
    assert out["a"].dtype == np.int32 and out["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert out["b"].tolist() == [0.0, 2.0, 4.0]
    assert out["c"].shape == (0, 3)
    assert out["d"] == [1, "two", None]
    meta, _, size, samples = describe(batch)
    offsets = [item[4] for item in meta["items"] if item[1] == "a"]
    assert all(offset % 64 == 0 for offset in offsets) and samples == 2 and size >= 24


def test_without_numpy_arrays_arrive_as_shaped_memoryviews() -> None:
    out = round_trip((np.arange(6, dtype=np.int16).reshape(2, 3), b"raw"), "memoryview")
    assert isinstance(out[0], memoryview) and out[0].shape == (2, 3) and out[0].format == "h"
    assert out[0].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert bytes(out[1]) == b"raw"


@pytest.mark.parametrize(
    "batch",
    [
        {1: np.zeros(1)},
        {"x": np.array([object()])},
        "just a string",
    ],
)
def test_what_cannot_travel_is_refused_on_the_data_host(batch: Any) -> None:
    with pytest.raises(DataPlaneError):
        describe(batch)


@pytest.mark.parametrize("array_type", ["auto", "numpy", "torch", "memoryview"])
def test_a_0_d_array_arrives_0_d(array_type: str) -> None:
    torch = pytest.importorskip("torch")
    out = round_trip({"n": np.array(5.0), "t": torch.tensor(7, dtype=torch.int32)}, array_type)
    assert tuple(out["n"].shape) == () and tuple(out["t"].shape) == ()
    assert float(out["n"][()] if array_type != "torch" else out["n"].item()) == 5.0
    samples = describe(np.array(5.0))[3]
    assert samples == 1


class Pair(NamedTuple):
    x: Any
    y: Any


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        ({"x": np.zeros(1), "meta": {1: "one"}}, "batch['meta'] has the key 1 (int)"),
        ({"meta": [{"ok": {(1, 2): 3}}]}, "batch['meta'][0]['ok'] has the key (1, 2) (tuple)"),
        ({"size": (224, 224)}, "batch['size'] is a builtins.tuple"),
        ((np.zeros(1), float("nan")), "batch[1] is nan: JSON values cannot be NaN"),
        ([np.zeros(1), {"w": np.float32(1.5)}], "batch[1]['w'] is a numpy.float32"),
        ({"nested": [np.zeros(2)]}, "batch['nested'][0] is a numpy.ndarray"),
        (OrderedDict(x=np.zeros(1)), "would arrive as a plain dict"),
        (Pair(np.zeros(1), np.zeros(1)), "would arrive as a plain tuple"),
        ({"deep": functools.reduce(lambda v, _: [v], range(80), 0)}, "nests deeper than 64"),
        ({"x": np.zeros([1] * 33)}, "batch['x'] has 33 dimensions; at most 32"),
    ],
)
def test_a_batch_json_would_change_is_refused_naming_where_and_the_fix(
    batch: Any, message: str
) -> None:
    # Before: JSON turned {1: x} into {"1": x} and tuples into lists, silently.
    with pytest.raises(BatchRefused) as caught:
        describe(batch)
    assert message in str(caught.value)
    assert "Fix" in str(caught.value) or "at most" in str(caught.value) or "deeper" in message


def test_json_values_that_travel_arrive_exactly_as_sent() -> None:
    values = {"none": None, "flag": True, "big": 2**70, "x": -0.0, "s": "\u00e9\ud800", "l": [{}]}
    out = round_trip({"a": np.zeros(1), **values})
    assert {key: out[key] for key in values} == values


def array_item(dtype: Any = "float32", shape: Any = (2,), offset: Any = 0, nbytes: Any = 8) -> Any:
    return [0, "a", dtype, list(shape) if isinstance(shape, tuple) else shape, offset, nbytes, "x"]


@pytest.mark.parametrize(
    ("items", "match"),
    [
        ([array_item(dtype="object")], "unknown dtype"),
        ([array_item(shape=(-1,))], "malformed shape"),
        ([array_item(shape="2")], "malformed shape"),
        ([array_item(shape=[1] * 40)], "malformed shape"),
        ([array_item(nbytes=4)], "does not hold"),
        ([array_item(offset=3)], "outside the payload"),
        ([array_item(offset=64)], "outside the payload"),
        ([array_item(), array_item()], "outside the payload"),  # overlapping
        ([["k", "z"]], "malformed batch item"),
        ("items", "malformed batch description"),
    ],
)
def test_a_hostile_batch_description_is_a_protocol_error(items: Any, match: str) -> None:
    buffer = PayloadBuffer(16, "numpy")
    with pytest.raises(ProtocolError, match=match):
        buffer.build({"layout": "tuple", "items": items}, 16)


CHILD = """
import array, json, sys, threading
sys.path.insert(0, sys.argv[1])
from hetero_runtime import data
secret, listening = "s" * 32, []

def make_batches(shard):
    for start in range(shard.index, 10, shard.count):
        yield {"x": array.array("f", [start, start + 0.5]), "raw": b"abc", "id": start}

server = threading.Thread(target=data.serve, args=(make_batches,), kwargs=dict(
    workers=2, host="cpu-1", bind="127.0.0.1", port=0, secret=secret, idle_timeout=30,
    on_listening=lambda address, port: listening.append("%s:%d" % (address, port))))
server.start()
while not listening:
    server.join(0.05)
remote = data.RemoteBatches(["cpu-1"], addresses={"cpu-1": listening[0]}, secret=secret, epochs=1)
batches = list(remote)
server.join(30)
print(json.dumps({
    "ids": sorted(b["id"] for b in batches),
    "x": [b["x"].tolist() for b in batches if b["id"] == 3],
    "types": sorted({type(b["x"]).__name__ for b in batches}),
    "server_alive": server.is_alive(),
    "third_party": sorted(m for m in ("numpy", "torch") if m in sys.modules),
}))
"""


def test_the_copied_helper_streams_batches_with_the_standard_library_only(
    tmp_path: Path,
) -> None:
    code_dir = tmp_path / "code"
    shutil.copytree(
        Path(runtime_package.__file__).parent,
        code_dir / "hetero_runtime",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", CHILD, str(code_dir)],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output == {
        "ids": list(range(10)),
        "x": [[3.0, 3.5]],
        "types": ["memoryview"],
        "server_alive": False,
        "third_party": [],
    }


def test_control_frames_are_parsed_as_their_bytes_arrive_and_checked_first() -> None:
    body = wire.encode_meta({"n": 3})
    stream = wire.frame_header(wire.CREDIT, body) + body + wire.frame_header(wire.PING, b"")
    reader = wire.FrameReader((wire.CREDIT, wire.PING))
    frames = []
    for index in range(len(stream)):  # one byte at a time: no read waits for the rest
        frames += reader.feed(stream[index : index + 1])
    assert frames == [(wire.CREDIT, {"n": 3}), (wire.PING, {})]
    assert not reader.buffer
    huge = wire.HEADER.pack(wire.MAGIC, wire.CREDIT, 0, 0, 1 << 30, 0)
    with pytest.raises(ProtocolError, match="exceeds the limit"):
        wire.FrameReader((wire.CREDIT,)).feed(huge)  # refused before waiting for 1 GiB
    with pytest.raises(ProtocolError, match="BATCH"):
        wire.FrameReader((wire.CREDIT,)).feed(wire.frame_header(wire.BATCH, b"", 8))


def test_bytes_waiting_past_the_deadline_are_read_nothing_waiting_is_a_timeout() -> None:
    # A reader whose process was stopped wakes after its deadline: the peer that did send is
    # not silent (before: TimeoutError, and the host counted as lost).
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b"abcd")
        buffer = bytearray(4)
        wire.read_exact(ours, memoryview(buffer), time.monotonic() - 5)
        assert bytes(buffer) == b"abcd"
        with pytest.raises(TimeoutError, match="read 0 of 4 bytes"):
            wire.read_exact(ours, memoryview(buffer), time.monotonic() - 5)
        theirs.sendall(b"ab")  # half a frame, then silence: cut at the deadline
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="read 2 of 4 bytes"):
            wire.read_exact(ours, memoryview(buffer), time.monotonic() + 0.3)
        assert time.monotonic() - started < 30  # cut, not left to hang
