#!/usr/bin/python3
"""Dev-time check that a safetensors file written by Kiln parses by the spec, with struct + json
+ NumPy/PyTorch only (this Python has no safetensors package). Not run by the tests.

Make the file with a program that calls kiln::io::save_safetensors(path, tensors, {{"k", "v"}})
where tensors[name] = arange(12).to(dtype).view({3, 4}) for every dtype name ("uint8", "float32",
..., bool as arange(12) % 2), and "transposed" = arange(12, float32).view({3, 4}).t(); then run
  /usr/bin/python3 tests/data/check_kiln_safetensors.py FILE
"""
import json
import struct
import sys

import numpy as np
import torch

NUMPY = {"BOOL": np.bool_, "U8": np.uint8, "U16": np.uint16, "U32": np.uint32, "U64": np.uint64,
         "I8": np.int8, "I16": np.int16, "I32": np.int32, "I64": np.int64, "F16": np.float16,
         "F32": np.float32, "F64": np.float64}
KILN_NAMES = {"bool": "BOOL", "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64",
              "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64", "float16": "F16",
              "bfloat16": "BF16", "float32": "F32", "float64": "F64"}

raw = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
assert (8 + n) % 8 == 0, "header not padded to 8"
header = json.loads(raw[8:8 + n].decode("utf-8"))
data = raw[8 + n:]
assert header.pop("__metadata__") == {"k": "v"}
spans = sorted((info["data_offsets"], name) for name, info in header.items())
position = 0
for (begin, end), name in spans:
    assert begin == position, f"{name}: gap or overlap at {begin}"
    position = end
assert position == len(data), "bytes after the last tensor"


def decode(info):
    begin, end = info["data_offsets"]
    chunk = data[begin:end]
    if info["dtype"] == "BF16":
        return torch.frombuffer(bytearray(chunk), dtype=torch.bfloat16).float().numpy().reshape(info["shape"])
    return np.frombuffer(chunk, dtype=np.dtype(NUMPY[info["dtype"]]).newbyteorder("<")).reshape(info["shape"])


expected = np.arange(12).reshape(3, 4)
for kiln_name, st_name in KILN_NAMES.items():
    info = header[kiln_name]
    assert info["dtype"] == st_name, (kiln_name, info["dtype"])
    assert info["data_offsets"][0] % np.dtype(NUMPY.get(st_name, np.uint16)).itemsize == 0
    want = expected % 2 if kiln_name == "bool" else expected
    assert (decode(info).astype(np.float64) == want).all(), kiln_name
assert (decode(header["transposed"]) == expected.T).all()
print(f"ok: {len(header)} tensors, header {n} bytes, data {len(data)} bytes")
