#!/usr/bin/python3
"""Facts about Debian's dataset-fashion-mnist files, read with gzip + NumPy (not Kiln), that
tests/datasets/fashion_mnist_test.cpp checks Kiln's loader against. Writes
tests/data/fashion_mnist_reference.json.

Run (with the package installed): /usr/bin/python3 tests/data/gen_fashion_mnist_reference.py
"""
import gzip
import json
import os

import numpy as np

ROOT = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))


def idx(name, offset):
    with gzip.open(os.path.join(ROOT, name)) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


reference = {}
for split, prefix in (("train", "train"), ("test", "t10k")):
    images = idx(prefix + "-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    labels = idx(prefix + "-labels-idx1-ubyte.gz", 8)
    reference[split] = {
        "count": int(images.shape[0]),
        "first_labels": labels[:20].tolist(),
        "class_counts": np.bincount(labels, minlength=10).tolist(),
        # Pixel sums (0..255 values) of a few images, and one row of the first image.
        "pixel_sums": {str(i): int(images[i].astype(np.int64).sum()) for i in (0, 1, 12345 % len(images), len(images) - 1)},
        "image0_row14": images[0, 14].tolist(),
        "mean": float((images / 255.0).mean()),
        "std": float((images / 255.0).std()),
    }
with open(os.path.join(HERE, "fashion_mnist_reference.json"), "w") as f:
    json.dump(reference, f)
    f.write("\n")
