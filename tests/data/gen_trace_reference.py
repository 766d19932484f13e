#!/usr/bin/env python3
"""Writes trace_reference.log: structured-trace records in the exact shape PyTorch's TORCH_TRACE
writes, for tests/trace/trace_test.cpp.

The formatting below restates torch/_logging/_internal.py (trace_structured and
TorchLogsFormatter(trace=True), PyTorch 2.x): the glog prefix, json.dumps of the envelope with
the kind first, then rank, frame_id, frame_compile_id, attempt, has_payload, and the payload as
"".join(f"\\n\\t{l}" for l in payload.split("\\n")), whose md5 is hashlib's. The installed
PyTorch (1.13) predates structured tracing, so the code is restated here rather than imported.
Times, process id and paths are fixed so the file is reproducible.

Run: /usr/bin/python3 tests/data/gen_trace_reference.py
"""
import hashlib
import json
import os


def payload_text(payload):
    # trace_structured: strings as they are; lists one element per line; others indent=0.
    if isinstance(payload, str):
        return payload
    if isinstance(payload, list):
        return "[\n" + ",\n".join(json.dumps(i) for i in payload) + "\n]"
    return json.dumps(payload, indent=0)


def record(kind, metadata, compile_id=None, rank=None, payload=None, line=10):
    envelope = {kind: metadata}
    if rank is not None:
        envelope["rank"] = rank
    if compile_id is not None:
        envelope["frame_id"], envelope["frame_compile_id"], envelope["attempt"] = compile_id
    text = None
    if payload is not None:
        text = payload_text(payload)
        envelope["has_payload"] = hashlib.md5(text.encode("utf-8")).hexdigest()
    out = f"V1130 01:23:45.{678901 + line:06d} 4242 src/capture/compile.cpp:{line}] "
    out += json.dumps(envelope)
    if text is not None:
        out += "".join(f"\n\t{l}" for l in text.split("\n"))
    return out + "\n"


GRAPH = (
    "graph(%0 : f32[s0, 128], %1 : f32[128, 64]):\n"
    "  %2 : f32[s0, 64] = matmul(%0, %1)\n"
    "\n"
    "  %3 : f32[s0, 64] = relu(%2)\n"
    "  return (%3)\n"
)

RECORDS = [
    record("str", ["examples/mlp.cpp", 0], line=1),
    record("dynamo_start", {"stack": [{"filename": 0, "line": 12, "name": "forward"}]},
           compile_id=(0, 0, 0), line=2),
    record("dynamo_output_graph", {"sizes": {"arg0": ["s0", 128], "arg1": [128, 64]}},
           compile_id=(0, 0, 0), payload=GRAPH, line=3),
    record("dynamo_guards", {}, compile_id=(0, 0, 0),
           payload=[{"code": "arg0.dtype == float32"}, {"code": "arg0.size(1) == 128"}], line=4),
    record("artifact", {"name": "recompile_reasons", "encoding": "json"}, compile_id=(0, 1, 0),
           payload=["size of arg0 dim 0 changed from 8 to 16"], line=5),
    record("artifact", {"name": "dynamo_graph_break_reason", "encoding": "string"},
           compile_id=(0, 1, 2), payload="item() at examples/mlp.cpp:30 \u2014 \u00b5s", line=6),
    record("artifact", {"name": "empty_payload", "encoding": "string"}, compile_id=(1, 0, 0),
           payload="", line=7),
    record("compilation_metrics", {"co_name": "forward", "graph_op_count": 2,
                                   "entire_frame_compile_time_s": 0.25, "fail_type": None},
           compile_id=(0, 1, 2), rank=3, line=8),
]

if __name__ == "__main__":
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trace_reference.log")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(RECORDS))
    print(f"wrote {path}")
