"""The frameworks' input pipelines (issue 32, items 4 and 7): a PyTorch DataLoader with worker
processes never duplicates a sample, and TensorFlow gets a ``tf.data.Dataset``."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from hetero_constructs.runtime import data
from tests.fixtures.data_plane import EXIT_SECONDS, PROMPT, Cluster, ids_batches
from tests.fixtures.data_trainers import start_trainer


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    started = Cluster()
    yield started
    started.stop()


LOADER = """
import torch
dataset = remote.torch_dataset()
loader = torch.utils.data.DataLoader(
    dataset, batch_size=None, num_workers={workers}, persistent_workers={persistent},
    multiprocessing_context={context!r} if {workers} else None,
)
with remote:
    for epoch in range(2):
        say({{"epoch": epoch, "ids": [int(i) for b in loader for i in b["ids"]]}})
    try:
        remote.state_dict()
    except data.DataPlaneError as error:
        say({{"state": str(error)}})
    else:
        say({{"state": None}})
say({{"done": True}})
"""


@pytest.mark.parametrize(
    ("workers", "persistent", "context"),
    [
        pytest.param(0, False, None, id="0"),
        pytest.param(1, False, "fork", id="1"),
        pytest.param(2, False, "fork", id="2-fork"),
        pytest.param(2, True, "spawn", id="2-spawn-persistent"),
        pytest.param(3, False, "fork", id="3-fork"),
    ],
)
def test_data_loader_workers_get_every_sample_exactly_once(
    cluster: Cluster, workers: int, persistent: bool, context: str | None
) -> None:
    pytest.importorskip("torch")
    cluster.start(ids_batches(240), workers=2)
    cluster.start(ids_batches(240), workers=3)  # 5 producers: loader workers get 2, 2, 1
    body = LOADER.format(workers=workers, persistent=persistent, context=context)
    ranks = [start_trainer(cluster, body, rank=rank, world_size=2) for rank in range(2)]
    try:
        for trainer in ranks:
            assert trainer.finish(300) == 0
        for host in cluster.hosts:
            assert host.wait(EXIT_SECONDS) == ("ok", "")
    finally:
        for trainer in ranks:
            trainer.kill()
    for epoch in range(2):
        ids = [i for trainer in ranks for i in trainer.said[epoch]["ids"]]
        assert sorted(ids) == list(range(240)), f"epoch {epoch}: lost or duplicated samples"
    epochs = [[line["ids"] for line in trainer.said[:2]] for trainer in ranks]
    assert epochs[0][0] != epochs[0][1]  # each epoch is a new epoch (shuffled by epoch)
    if workers:
        assert "num_workers=0" in ranks[0].said[2]["state"]
    else:
        assert ranks[0].said[2]["state"] is None


def test_ordered_data_loader_workers_keep_one_order(cluster: Cluster) -> None:
    """With ordered=True, the same seed and num_workers give the same order every run."""
    pytest.importorskip("torch")
    cluster.start(ids_batches(120, delay=0.005), workers=3)
    body = LOADER.format(workers=2, persistent=False, context="fork")
    orders = []
    for _ in range(2):
        trainer = start_trainer(cluster, body.replace("range(2)", "range(1)"), rank=0, world_size=2)
        try:
            assert trainer.finish(300) == 0
        finally:
            trainer.kill()
        orders.append(trainer.said[0]["ids"])
    assert orders[0] == orders[1]


def test_the_rank_says_goodbye_when_its_loader_workers_end_the_last_epoch(
    cluster: Cluster,
) -> None:
    """epochs=2 without close() or with: the loader workers' last epoch ends the rank."""
    pytest.importorskip("torch")
    host = cluster.start(ids_batches(60), workers=2)
    body = """
import torch
loader = torch.utils.data.DataLoader(remote.torch_dataset(), batch_size=None, num_workers=2)
for epoch in range(2):
    ids = [int(i) for b in loader for i in b["ids"]]
say({"ended": sorted(ids) == list(range(60))})
sys.stdin.read()  # the process lives on: no exit goodbye
"""
    trainer = start_trainer(cluster, body, rank=0, world_size=1, epochs=2)
    try:
        assert trainer.wait_for("ended", 300)["ended"]
        assert host.wait(PROMPT) == ("ok", "")  # not after its idle timeout
        assert trainer.process.poll() is None
    finally:
        trainer.kill()


TF_AVAILABLE = importlib.util.find_spec("tensorflow") is not None


@pytest.mark.skipif(
    not TF_AVAILABLE,
    reason="TensorFlow is not installed here; the test extra brings tensorflow-cpu: "
    "pip install -c requirements/lock.txt -e '.[test]'",
)
def test_tf_dataset_gives_tensorflow_every_batch(cluster: Cluster) -> None:
    cluster.start(ids_batches(60), workers=2)
    body = """
import tensorflow as tf
dataset = remote.tf_dataset()
say({"spec": {k: [str(v.dtype.name), v.shape.as_list()] for k, v in dataset.element_spec.items()}})
with remote:
    for epoch in range(2):
        ids = []
        for batch in dataset.prefetch(2):
            assert isinstance(batch["x"], tf.Tensor)
            ids += batch["ids"].numpy().tolist()
        say({"ids": ids})
"""
    trainer = start_trainer(cluster, body, rank=0, world_size=1)
    try:
        assert trainer.finish(300) == 0
    finally:
        trainer.kill()
    assert trainer.said[0]["spec"] == {
        "ids": ["int64", [None]],
        "x": ["float32", [None, 3]],
        "epoch": ["int64", []],
    }
    for line in trainer.said[1:]:
        assert sorted(line["ids"]) == list(range(60))
    assert cluster.hosts[0].wait(EXIT_SECONDS) == ("ok", "")


def test_tf_dataset_without_tensorflow_says_what_is_missing(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "tensorflow", None)  # import tensorflow now fails
    remote = data.RemoteBatches(["nowhere"], addresses={"nowhere": "127.0.0.1:1"}, secret="s" * 32)
    with pytest.raises(data.DataPlaneError, match="needs TensorFlow"):
        remote.tf_dataset()
    remote.closed = True  # never connected: nothing to say goodbye to
