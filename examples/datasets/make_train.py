#!/usr/bin/env python3
"""Writes ``train/part-0.csv``, the example job's training set (``make synth`` uploads it to the
local account's ``s3://example-training-data/datasets/train/``).

1,000 rows of four features on different scales and a 0/1 label, with a header line:
label = [x0 - 2 x1 + x2 / 10 + noise > 0]; x3 is unrelated to the label. Deterministic (seed 7):
``python examples/datasets/make_train.py`` rewrites the same bytes.
"""

from __future__ import annotations

import csv
import random
import sys
from pathlib import Path

ROWS = 1000
SEED = 7


def rows(count: int = ROWS, seed: int = SEED) -> list[list[float]]:
    rng = random.Random(seed)
    result = []
    for _ in range(count):
        x = [rng.gauss(0, 1), rng.gauss(0, 1), rng.gauss(0, 10), rng.gauss(5, 3)]
        label = float(x[0] - 2 * x[1] + x[2] / 10 + rng.gauss(0, 0.1) > 0)
        result.append([round(value, 4) for value in x] + [label])
    return result


def write(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["x0", "x1", "x2", "x3", "label"])
        writer.writerows([*row[:-1], int(row[-1])] for row in rows())


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "train"
    write(target / "part-0.csv")
