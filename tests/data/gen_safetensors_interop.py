#!/usr/bin/python3
"""Writes tests/data/safetensors_interop.safetensors by hand (struct + json, no safetensors
package) from values made with PyTorch/NumPy, and the same values as JSON in
tests/data/safetensors_interop.json, so tests/io/safetensors_test.cpp checks that Kiln reads a file
it did not write. The layout differs from Kiln's on purpose: tensors in name order (so some start
at unaligned offsets) and a header with no padding.

Run: /usr/bin/python3 tests/data/gen_safetensors_interop.py
"""
import json
import os
import struct

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))

torch.manual_seed(0)
# (name, safetensors dtype, tensor as a numpy array of the right dtype)
tensors = [
    ("bool_mask", "BOOL", (torch.rand(2, 3) > 0.5).numpy()),
    ("u8_pixels", "U8", torch.randint(0, 256, (3, 5), dtype=torch.uint8).numpy()),
    ("u16", "U16", np.array([0, 1, 65535, 40000, 12345], dtype=np.uint16)),
    ("u32", "U32", np.array([[0, 4294967295], [3000000000, 7]], dtype=np.uint32)),
    ("u64", "U64", np.array([0, 18446744073709551615, 9223372036854775808], dtype=np.uint64)),
    ("i8", "I8", np.array([-128, -1, 0, 127], dtype=np.int8)),
    ("i16", "I16", torch.tensor([-32768, -2, 3, 32767], dtype=torch.int16).numpy()),
    ("i32", "I32", torch.randint(-2**31, 2**31 - 1, (2, 2, 2), dtype=torch.int32).numpy()),
    ("i64_scalar", "I64", np.array(-9223372036854775807, dtype=np.int64)),
    ("f16", "F16", torch.tensor([1.0, -2.5, 65504.0, 0.0009765625, -0.0], dtype=torch.float16).numpy()),
    # bfloat16 has no NumPy type: keep its raw 16-bit patterns.
    ("bf16", "BF16", torch.tensor([1.0, -3.5, 1e30, 0.0078125], dtype=torch.bfloat16)
        .view(torch.int16).numpy().view(np.uint16)),
    ("f32_weight", "F32", torch.randn(4, 3).numpy()),
    ("f32_empty", "F32", np.zeros((0, 3), dtype=np.float32)),
    ("f64", "F64", torch.randn(3, dtype=torch.float64).numpy()),
]
metadata = {"format": "pt", "written_by": "gen_safetensors_interop.py"}

header = {"__metadata__": metadata}
data = b""
for name, dtype, array in sorted(tensors, key=lambda t: t[0]):
    raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
    header[name] = {"dtype": dtype, "shape": list(array.shape),
                    "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
header_bytes = json.dumps(header, separators=(",", ":")).encode()
with open(os.path.join(HERE, "safetensors_interop.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(header_bytes)))
    f.write(header_bytes)
    f.write(data)


def values(dtype, array):
    if dtype == "BF16":  # the float each bit pattern stands for
        return torch.from_numpy(array.astype(np.int16)).view(torch.bfloat16).float().flatten().tolist()
    if dtype == "BOOL":
        return [int(v) for v in array.flatten()]
    return [v.item() if hasattr(v, "item") else v for v in array.flatten()]


expected = {
    "metadata": metadata,
    "tensors": {name: {"dtype": dtype, "shape": list(array.shape), "values": values(dtype, array)}
                for name, dtype, array in tensors},
}
with open(os.path.join(HERE, "safetensors_interop.json"), "w") as f:  # one tensor per line
    f.write('{"metadata": %s,\n "tensors": {\n' % json.dumps(metadata))
    f.write(",\n".join("  %s: %s" % (json.dumps(name), json.dumps(entry))
                       for name, entry in expected["tensors"].items()))
    f.write("\n }\n}\n")
