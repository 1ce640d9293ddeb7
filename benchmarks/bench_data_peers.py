"""The data plane's peers, for ``bench_data.py``: the same batches through what others use.

- **grpc-pickle**: the pattern of AWS's PyTorch heterogeneous-cluster sample
  (amazon-sagemaker-examples, ``training/heterogeneous-clusters/pt.grpc.sagemaker``): producer
  processes put pickled batches on a shared ``multiprocessing`` queue, a gRPC server streams
  them to the trainer (one server-streaming call), which unpickles each. Needs ``grpcio``,
  which the project does not depend on: install it in a benchmark environment of its own, e.g.
  ``python -m venv --system-site-packages /work/venv-bench`` plus ``pip install grpcio``.
- **tf.data service**: the pattern of AWS's TensorFlow sample (a dispatcher and workers on the
  data host, ``distribute()`` on the trainer), where TensorFlow is installed.

Each returns batches per second received by one trainer in this process, or a reason it could
not run.
"""

from __future__ import annotations

import importlib
import multiprocessing
import pickle
import time
from collections.abc import Callable, Iterator
from typing import Any

FORK = multiprocessing.get_context("fork")
MAX_MESSAGE = 64 << 20


def missing(module: str) -> str | None:
    """Why a peer cannot run here (its package is absent), or ``None``."""
    try:
        importlib.import_module(module)
    except ImportError as error:
        return f"{module} is not installed ({error})"
    return None


# -- gRPC streaming pickled batches from a shared queue --------------------------------------


def _grpc_producer(queue: Any, make_batch: Callable[[], Any], count: int) -> None:
    for _ in range(count):
        queue.put(pickle.dumps(make_batch(), protocol=pickle.HIGHEST_PROTOCOL))


def _grpc_server(port_pipe: Any, make_batch: Callable[[], Any], total: int, workers: int) -> None:
    from concurrent import futures

    grpc = importlib.import_module("grpc")  # not a dependency of the project

    queue = FORK.Queue(maxsize=4 * workers)
    producers = [
        FORK.Process(target=_grpc_producer, args=(queue, make_batch, total // workers))
        for _ in range(workers)
    ]
    for producer in producers:
        producer.start()

    def batches(request: bytes, context: Any) -> Iterator[bytes]:
        for _ in range(total // workers * workers):
            yield queue.get()

    options = [
        ("grpc.max_send_message_length", MAX_MESSAGE),
        ("grpc.max_receive_message_length", MAX_MESSAGE),
    ]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), options=options)
    handler = grpc.method_handlers_generic_handler(
        "DataFeed", {"Batches": grpc.unary_stream_rpc_method_handler(batches)}
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    port_pipe.send(port)
    port_pipe.recv()  # the trainer is done
    server.stop(0)
    for producer in producers:
        producer.join(10)


def grpc_pickle_rate(make_batch: Callable[[], Any], total: int, workers: int) -> float:
    """Batches per second of ``total`` batches from ``workers`` producers over gRPC."""
    grpc = importlib.import_module("grpc")

    ours, theirs = FORK.Pipe()
    server = FORK.Process(target=_grpc_server, args=(theirs, make_batch, total, workers))
    server.start()
    port = ours.recv()
    options = [("grpc.max_receive_message_length", MAX_MESSAGE)]
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        call = channel.unary_stream("/DataFeed/Batches")
        stream = iter(call(b""))
        pickle.loads(next(stream))  # the producers have started
        received = 0
        started = time.perf_counter()
        for message in stream:
            pickle.loads(message)
            received += 1
        elapsed = time.perf_counter() - started
    ours.send("done")
    server.join(30)
    return float(received / elapsed)


# -- tf.data service -----------------------------------------------------------------------


def tf_data_service_rate(make_batch: Callable[[], Any], total: int, workers: int) -> float:
    """Batches per second through a local tf.data service (a dispatcher and ``workers``
    workers in this process, as TensorFlow's own tests run it)."""
    tf = importlib.import_module("tensorflow")

    sample = make_batch()
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    servers = [
        tf.data.experimental.service.WorkerServer(
            tf.data.experimental.service.WorkerConfig(dispatcher_address=address)
        )
        for _ in range(workers)
    ]
    spec = tuple(tf.TensorSpec(value.shape, tf.as_dtype(value.dtype)) for value in sample)

    def generate() -> Iterator[Any]:
        for _ in range(total // workers):
            yield tuple(make_batch())

    dataset = tf.data.Dataset.from_generator(generate, output_signature=spec)
    dataset = dataset.apply(
        tf.data.experimental.service.distribute("parallel_epochs", dispatcher.target)
    )
    iterator = iter(dataset)
    next(iterator)
    received = 0
    started = time.perf_counter()
    for _ in iterator:
        received += 1
    elapsed = time.perf_counter() - started
    del servers
    return received / elapsed


__all__ = ["grpc_pickle_rate", "missing", "tf_data_service_rate"]
