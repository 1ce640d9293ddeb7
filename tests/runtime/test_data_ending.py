"""Every way a rank ends tells the data hosts (issue 32, item 1): they return at once instead of
waiting ``idle_timeout`` and failing the job. Trainers are real processes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.fixtures.data_plane import PROMPT, Cluster, ids_batches
from tests.fixtures.data_trainers import start_trainer

# The data hosts' idle_timeout is the fixture's (120 s): ending within PROMPT (30 s) of the
# rank's end means they heard its goodbye.
BLOCK = "say({'ended': True})\nsys.stdin.read()  # the process lives on: no exit goodbye\n"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    started = Cluster()
    yield started
    started.stop()


ENDINGS = {
    "close-without-iterating": "remote.close()\n" + BLOCK,
    "with-block-without-iterating": "with remote:\n    pass\n" + BLOCK,
    "exit-without-iterating": "say({'ended': True})\n",
    "exit-mid-epoch-without-close": "next(iter(remote))\nsay({'ended': True})\n",
    "garbage-collected": ("import gc\nnext(iter(remote))\ndel remote\ngc.collect()\n" + BLOCK),
    "garbage-collected-unconnected": "import gc\ndel remote\ngc.collect()\n" + BLOCK,
    "break-out-of-the-last-epoch": (
        "for epoch in range(2):\n"
        "    for index, batch in enumerate(remote):\n"
        "        if epoch == 1 and index == 1:\n"
        "            break\n" + BLOCK
    ),
    "no-epochs-left": (  # a job resumed from a checkpoint taken after its last epoch
        "state = remote.state_dict()\n"
        "state.update(epoch=2, epochs_done=2)\n"
        "remote.load_state_dict(state)\n" + BLOCK
    ),
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_serve_returns_promptly_however_the_rank_ends(cluster: Cluster, ending: str) -> None:
    host = cluster.start(ids_batches(400), workers=2)
    trainer = start_trainer(cluster, ENDINGS[ending], rank=0, world_size=1, epochs=2)
    try:
        trainer.wait_for("ended", 300)
        ended = time.monotonic()
        assert host.wait(PROMPT + 20) == ("ok", ""), ending
        assert time.monotonic() - ended < PROMPT, f"{ending}: the data host waited for silence"
        if "sys.stdin.read()" in ENDINGS[ending]:
            assert trainer.process.poll() is None  # the goodbye came before exit
    finally:
        trainer.kill()


def test_every_rank_ending_its_own_way_ends_serve(cluster: Cluster) -> None:
    """Rank 0 trains both epochs, rank 1 has none left, rank 2 stops after 3 steps."""
    hosts = [cluster.start(ids_batches(300), workers=2) for _ in range(2)]
    bodies = [
        "for epoch in range(2):\n    list(remote)\nsay({'ended': True})\n",
        "say({'ended': True})\n",
        "for index, batch in enumerate(remote):\n    if index == 2:\n        break\n" + BLOCK,
    ]
    trainers = [
        start_trainer(cluster, body, rank=rank, world_size=3, epochs=2 if rank == 0 else 1)
        for rank, body in enumerate(bodies)
    ]
    try:
        for trainer in trainers:
            trainer.wait_for("ended", 300)
        ended = time.monotonic()
        for host in hosts:
            assert host.wait(PROMPT + 20) == ("ok", "")
        assert time.monotonic() - ended < PROMPT
    finally:
        for trainer in trainers:
            trainer.kill()
