"""pita trace reads recordings a chunk at a time: tensors stay in their files (FileTensors), and no
whole tensor is copied to float64, with or without a float64 run (the 300 M-parameter pair must
trace within 500 MB; its embedding alone is 51 M elements, 412 MB in float64)."""

import json
import tracemalloc

import numpy as np

from pita.dump import Dump, read_dump, write_dump
from pita.trace import trace_dumps

N = 6_000_000  # elements of the one large parameter: 24 MB in float32, 48 MB in float64


def test_trace_holds_no_float64_copy_of_a_whole_tensor(tmp_path):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal(N)
    gradient = rng.standard_normal(N) * 1e-3
    truth = {"param/fc.weight": weight, "act/fc": weight[:64].copy(), "loss/1": np.array([1.0]), "grad/fc.weight": gradient,
             "step1/fc.weight": weight - 0.1 * gradient}
    metadata = {"recording": "pita-record/1", "execution_order": json.dumps(["act/fc"]), "steps": "1"}
    write_dump(Dump(truth, {**metadata, "dtype": "float64"}), tmp_path / "reference-float64.safetensors")
    write_dump(Dump({name: value.astype(np.float32) for name, value in truth.items()}, {**metadata, "dtype": "float32"}),
               tmp_path / "reference.safetensors")
    del weight, gradient, truth
    reference, exact = read_dump(tmp_path / "reference.safetensors"), read_dump(tmp_path / "reference-float64.safetensors")
    tracemalloc.start()
    try:
        result = trace_dumps(reference, read_dump(tmp_path / "reference.safetensors"), reference64=exact)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok and result.judged_by == "float64 budget"
    # chunks of a million elements take tens of MB whatever the size; two float64 copies of the
    # parameter (what the optimizer step's floor once took: after - before) would take 96 MB
    assert peak < 2 * N * 8, f"{peak / 1e6:.0f} MB"
