"""The data plane's peers, for ``bench_data.py``: the same batches through what others use.

- **grpc-pickle**: the pattern of AWS's PyTorch heterogeneous-cluster sample
  (amazon-sagemaker-examples, ``training/heterogeneous-clusters/pt.grpc.sagemaker``): producer
  processes put pickled batches on a shared ``multiprocessing`` queue, a gRPC server streams
  them to the trainer (one server-streaming call), which unpickles each. Needs ``grpcio``,
  which the project does not depend on: install it in a benchmark environment of its own, e.g.
  ``python -m venv --system-site-packages /work/venv-bench`` plus ``pip install grpcio``.
- **tf.data service**: the pattern of AWS's TensorFlow sample (a dispatcher and workers on the
  data host, ``distribute()`` on the trainer), where TensorFlow is installed: here the
  dispatcher runs in the trainer's process and each worker in a process of its own.

Each returns batches per second received by one trainer in this process, or a reason it could
not run.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import pickle
import time
from collections.abc import Callable, Iterator
from typing import Any

# TensorFlow's servers log their configuration at start: keep the benchmark's output readable.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
FORK = multiprocessing.get_context("fork")
SPAWN = multiprocessing.get_context("spawn")  # TensorFlow's threads do not survive a fork
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


def _tf_worker(dispatcher: str, pipe: Any) -> None:
    """A tf.data service worker in a process of its own, as on a data host."""
    tf = importlib.import_module("tensorflow")
    service = tf.data.experimental.service
    worker = service.WorkerServer(service.WorkerConfig(dispatcher_address=dispatcher))
    pipe.send("up")
    pipe.recv()  # the trainer is done
    del worker


def tf_data_service_rate(make_batch: Callable[[], Any], total: int, workers: int) -> float:
    """Batches per second through tf.data service: a dispatcher in this process, ``workers``
    worker processes, each making ``total / workers`` copies of the batch (a pure-TensorFlow
    dataset: ``from_generator`` cannot run in a worker of another process)."""
    tf = importlib.import_module("tensorflow")
    service = tf.data.experimental.service
    dispatcher = service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    pipes, processes = [], []
    for _ in range(workers):
        ours, theirs = SPAWN.Pipe()
        process = SPAWN.Process(target=_tf_worker, args=(address, theirs))
        process.start()
        pipes.append(ours)
        processes.append(process)
    try:
        for ours in pipes:
            if not ours.poll(300):
                raise RuntimeError("a tf.data service worker did not start")
            ours.recv()
        batch = {key: tf.constant(value) for key, value in make_batch().items()}
        dataset = tf.data.Dataset.from_tensors(batch).repeat(total // workers)
        # No compression: its fastest setting on loopback (the default may compress).
        distribute = service.distribute("parallel_epochs", dispatcher.target, compression=None)
        dataset = dataset.apply(distribute)
        iterator = iter(dataset)
        next(iterator)  # the workers have started
        received = 0
        started = time.perf_counter()
        for _ in iterator:
            received += 1
        return float(received / (time.perf_counter() - started))
    finally:
        for ours in pipes:
            ours.send("done")
        for process in processes:
            process.join(30)


__all__ = ["grpc_pickle_rate", "missing", "tf_data_service_rate"]
