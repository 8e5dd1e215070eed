"""Benchmark: `pita compare` and `pita trace` on realistic recordings, against the same bytes as one tensor.

Real recordings are hundreds of tensors of every size, not one large one. This writes, in a
temporary folder, two recordings of two training steps (docs/recording.md) with the size mix of
  - a BERT-style transformer (embeddings, q/k/v/o, FFN, LayerNorms, biases, [batch, seq, hidden]
    activations, gradients, parameters after each step; about 525 tensors, 48 M elements a side),
  - a ResNet-like CNN (convolutions of many sizes, BatchNorm parameters and buffers, activations),
each candidate a few ULPs from its reference everywhere a training run moves values (parameters
before step 1 are equal), written with pita's own writer (no torch). Beside each pair it writes
the same float32 bytes as ONE tensor a side. It then times, best of R:
  - whole processes: `pita compare A B` and `pita trace A B` on the recordings, `pita compare` on
    the one-tensor pair, and process start-up alone (`pita --version`);
  - in process: `compare_dumps` and `trace_dumps` on the same files (read included);
and prints GB/s (of both inputs) and the ratios against the targets: a recording within 2x the
time of its one-tensor pair, trace within 1.2x compare (whole processes), a 2x200 MB one-tensor
pair under 0.3 s.

    .venv/bin/python bench/recording.py [--repeat R] [--dir DIR] [--only bert|cnn]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pita.compare import Tolerance, compare_dumps
from pita.dump import Dump, read_dump, write_dump
from pita.recording import RECORDING
from pita.trace import trace_dumps

ATOL = 1e-5  # every pair passes it: a few ULPs of values up to ~20
MAX_ULPS = 3  # candidates are 1..MAX_ULPS ULPs from the reference (drawn at random), where a run moves values
TARGET_RECORDING_RATIO = 2.0  # a recording pair within 2x its one-tensor pair, as whole processes
TARGET_TRACE_RATIO = 1.2  # trace within 1.2x compare, as whole processes
TARGET_ONE_TENSOR_SECONDS = 0.3  # a whole `pita compare` on a 2x200 MB one-tensor pair
PITA = Path(sys.executable).with_name("pita")


# --- the recordings ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """A model's recorded tensors: parameters (path -> shape), buffers (recorded after each step)
    and activations (module -> shape), in execution order."""

    name: str
    params: dict[str, tuple[int, ...]]
    buffers: dict[str, tuple[int, ...]]
    acts: dict[str, tuple[int, ...]]


def bert(layers: int = 6, hidden: int = 256, ffn: int = 1024, vocab: int = 8192, batch: int = 4, seq: int = 128,
         classes: int = 2) -> Model:
    """A BERT-style encoder for sequence classification, as Hugging Face names its modules."""
    params, acts = {}, {}
    tokens = (batch, seq, hidden)
    e = "bert.embeddings"
    params.update({f"{e}.word_embeddings.weight": (vocab, hidden), f"{e}.position_embeddings.weight": (512, hidden),
                   f"{e}.token_type_embeddings.weight": (2, hidden), f"{e}.LayerNorm.weight": (hidden,), f"{e}.LayerNorm.bias": (hidden,)})
    acts.update({f"{e}.word_embeddings": tokens, f"{e}.token_type_embeddings": tokens, f"{e}.position_embeddings": (1, seq, hidden),
                 f"{e}.LayerNorm": tokens, f"{e}.dropout": tokens, e: tokens})
    for i in range(layers):
        p = f"bert.encoder.layer.{i}"
        for linear, (out, inp) in {"attention.self.query": (hidden, hidden), "attention.self.key": (hidden, hidden),
                                   "attention.self.value": (hidden, hidden), "attention.output.dense": (hidden, hidden),
                                   "intermediate.dense": (ffn, hidden), "output.dense": (hidden, ffn)}.items():
            params.update({f"{p}.{linear}.weight": (out, inp), f"{p}.{linear}.bias": (out,)})
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            params.update({f"{p}.{norm}.weight": (hidden,), f"{p}.{norm}.bias": (hidden,)})
        for module in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.self",
                       "attention.output.dense", "attention.output.dropout", "attention.output.LayerNorm", "attention.output",
                       "attention", "intermediate.dense", "intermediate.intermediate_act_fn", "intermediate", "output.dense",
                       "output.dropout", "output.LayerNorm", "output", ""):
            wide = module.startswith("intermediate")
            acts[f"{p}.{module}".rstrip(".")] = (batch, seq, ffn) if wide else tokens
    params.update({"bert.pooler.dense.weight": (hidden, hidden), "bert.pooler.dense.bias": (hidden,),
                   "classifier.weight": (classes, hidden), "classifier.bias": (classes,)})
    acts.update({"bert.pooler.dense": (batch, hidden), "bert.pooler.activation": (batch, hidden), "bert.pooler": (batch, hidden),
                 "dropout": (batch, hidden), "classifier": (batch, classes), "": (batch, classes)})
    return Model("BERT-style transformer", params, {}, acts)


def resnet(widths: tuple[int, ...] = (32, 64, 128, 256), blocks: int = 2, batch: int = 16, size: int = 96, classes: int = 100) -> Model:
    """A ResNet-like CNN (torchvision's names): a stem, stages of basic blocks, a classifier."""
    params, buffers, acts = {}, {}, {}

    def conv_bn(conv: str, bn: str, out: int, inp: int, kernel: int, side: int) -> None:
        params[f"{conv}.weight"] = (out, inp, kernel, kernel)
        params.update({f"{bn}.weight": (out,), f"{bn}.bias": (out,)})
        buffers.update({f"{bn}.running_mean": (out,), f"{bn}.running_var": (out,), f"{bn}.num_batches_tracked": ()})
        acts.update({conv: (batch, out, side, side), bn: (batch, out, side, side)})

    side = size // 2
    conv_bn("conv1", "bn1", widths[0], 3, 7, side)
    acts["relu"] = (batch, widths[0], side, side)
    side //= 2
    acts["maxpool"] = (batch, widths[0], side, side)
    inp = widths[0]
    for stage, width in enumerate(widths, start=1):
        for block in range(blocks):
            p = f"layer{stage}.{block}"
            if block == 0 and stage > 1:
                side //= 2
            conv_bn(f"{p}.conv1", f"{p}.bn1", width, inp, 3, side)
            acts[f"{p}.relu"] = (batch, width, side, side)
            conv_bn(f"{p}.conv2", f"{p}.bn2", width, width, 3, side)
            if block == 0 and inp != width:
                conv_bn(f"{p}.downsample.0", f"{p}.downsample.1", width, inp, 1, side)
                acts[f"{p}.downsample"] = (batch, width, side, side)
            acts[f"{p}.relu#2"] = (batch, width, side, side)
            acts[p] = (batch, width, side, side)
            inp = width
        acts[f"layer{stage}"] = (batch, inp, side, side)
    params.update({"fc.weight": (classes, inp), "fc.bias": (classes,)})
    acts.update({"avgpool": (batch, inp, 1, 1), "fc": (batch, classes), "": (batch, classes)})
    return Model("ResNet-like CNN", params, buffers, acts)


MODELS = {"bert": bert, "cnn": resnet}


def recorded_shapes(model: Model, steps: int = 2) -> dict[str, tuple[tuple[int, ...], bool, bool]]:
    """Every recorded name: (shape, whether the run moves it (the candidate differs), whether it is an integer)."""
    names = {f"param/{path}": (shape, False, False) for path, shape in model.params.items()}
    names.update({f"act/{module}": (shape, True, False) for module, shape in model.acts.items()})
    names.update({f"loss/{k}": ((), True, False) for k in range(1, steps + 1)})
    names.update({f"grad/{path}": (shape, True, False) for path, shape in model.params.items()})
    for k in range(1, steps + 1):
        names.update({f"step{k}/{path}": (shape, True, False) for path, shape in model.params.items()})
        names.update({f"step{k}/{path}": (shape, not path.endswith("num_batches_tracked"), path.endswith("num_batches_tracked"))
                      for path, shape in model.buffers.items()})
    return names


def write_pair(model: Model, folder: Path, seed: int = 0) -> tuple[Path, Path, int]:
    """The reference and candidate recordings of `model`, and how many float32 elements each holds."""
    rng = np.random.default_rng(seed)
    reference, candidate = {}, {}
    for name, (shape, moved, integer) in recorded_shapes(model).items():
        if integer:
            reference[name] = candidate[name] = np.array(2, dtype=np.int64)
            continue
        values = rng.standard_normal(shape, dtype=np.float32)
        reference[name] = values
        candidate[name] = a_few_ulps_away(values, rng) if moved else values
    metadata = {"recording": RECORDING, "steps": "2", "dtype": "float32",
                "execution_order": json.dumps([f"act/{module}" for module in model.acts]),
                "buffers": json.dumps(list(model.buffers))}
    paths = folder / f"{model.name.split()[0].lower()}-reference.safetensors", folder / f"{model.name.split()[0].lower()}-candidate.safetensors"
    write_dump(Dump(reference, metadata), paths[0])
    write_dump(Dump(candidate, metadata), paths[1])
    elements = sum(t.size for t in reference.values() if t.dtype == np.float32)
    return *paths, elements


def a_few_ulps_away(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`values` with every element moved 0..MAX_ULPS ULPs away from zero, as after a run's summation orders differ
    (one more in the bits is one ULP further from zero, either sign; standard normals are far from the largest float)."""
    bits = values.view(np.int32).copy()
    bits += rng.integers(0, MAX_ULPS + 1, size=bits.shape, dtype=np.int32)
    return bits.view(np.float32)


def write_one_tensor_pair(recording: tuple[Path, Path], folder: Path, stem: str) -> tuple[Path, Path]:
    """The float32 bytes of each recording as one flat tensor a side."""
    paths = folder / f"{stem}-one-reference.safetensors", folder / f"{stem}-one-candidate.safetensors"
    for source, target in zip(recording, paths):
        dump = read_dump(source)
        flat = [np.asarray(t).reshape(-1) for t in dump.tensors.values() if t.dtype == np.float32]
        write_dump(Dump({"t": np.concatenate(flat)}), target)
    return paths


# --- timing --------------------------------------------------------------------------------------


def best_of(repeat: int, run) -> tuple[float, float, float]:
    """The best wall time of `repeat` runs, the spread (worst / best) to show the noise, and the
    least CPU time (user + system) of the child processes a run started (0 in process): on a shared
    machine CPU time moves less than wall time."""
    times, cpu = [], []
    for _ in range(repeat):
        before = _children_cpu()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
        cpu.append(_children_cpu() - before)
    return min(times), max(times) / min(times), min(cpu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process(*args: str, expected: int = 0):
    command = [str(PITA), *args]

    def run():
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != expected:
            raise SystemExit(f"{' '.join(command)}: exit {done.returncode}, expected {expected}\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return run


def in_process_compare(pair: tuple[Path, Path]):
    def run():
        result = compare_dumps(read_dump(pair[0]), read_dump(pair[1]), Tolerance(atol=ATOL))
        assert result.ok, [t.name for t in result.tensors if not t.ok][:5]
    return run


def in_process_trace(pair: tuple[Path, Path]):
    def run():
        result = trace_dumps(read_dump(pair[0]), read_dump(pair[1]), Tolerance(atol=ATOL))
        assert result.to_dict()["ok"], "the trace failed"
    return run


def verdict(value: float, target: float) -> str:
    return f"target <={target:g}: {'met' if value <= target else 'MISSED'}"


def bench_model(model: Model, folder: Path, repeat: int) -> bool:
    reference, candidate, elements = write_pair(model, folder)
    recording = (reference, candidate)
    one = write_one_tensor_pair(recording, folder, reference.stem.split("-")[0])
    tensors = len(read_dump(reference).tensors)
    input_bytes = reference.stat().st_size + candidate.stat().st_size
    tolerance = ("--atol", str(ATOL))
    for run in (process("compare", *map(str, recording), *tolerance), process("compare", *map(str, one), *tolerance)):
        run()  # warm-up: the page cache
    timings = {
        "process: compare, recording": best_of(repeat, process("compare", *map(str, recording), *tolerance)),
        "process: trace, recording": best_of(repeat, process("trace", *map(str, recording), *tolerance)),
        "process: compare, one tensor": best_of(repeat, process("compare", *map(str, one), *tolerance)),
        "in process: compare, recording": best_of(repeat, in_process_compare(recording)),
        "in process: trace, recording": best_of(repeat, in_process_trace(recording)),
        "in process: compare, one tensor": best_of(repeat, in_process_compare(one)),
    }
    print(f"\n{model.name}: {tensors} tensors a side, {elements / 1e6:.1f} M float32 elements "
          f"({input_bytes / 2e6:.0f} MB a side), atol {ATOL:g}, best of {repeat}")
    print(f"{'':36}{'seconds':>9}{'GB/s':>8}{'spread':>8}{'CPU s':>8}")
    for name, (seconds, spread, cpu) in timings.items():
        print(f"{name:36}{seconds:9.3f}{input_bytes / seconds / 1e9:8.2f}{spread:7.2f}x" + (f"{cpu:8.3f}" if cpu else ""))
    ratio = timings["process: compare, recording"][0] / timings["process: compare, one tensor"][0]
    trace_ratio = timings["process: trace, recording"][0] / timings["process: compare, recording"][0]
    in_ratio = timings["in process: compare, recording"][0] / timings["in process: compare, one tensor"][0]
    print(f"recording / one tensor, whole processes: {ratio:.2f}x ({verdict(ratio, TARGET_RECORDING_RATIO)}); in process: {in_ratio:.2f}x")
    print(f"trace / compare, whole processes: {trace_ratio:.2f}x ({verdict(trace_ratio, TARGET_TRACE_RATIO)})")
    cpu = lambda name: timings[name][2]
    print(f"in CPU time, whole processes: recording / one tensor {cpu('process: compare, recording') / cpu('process: compare, one tensor'):.2f}x, "
          f"trace / compare {cpu('process: trace, recording') / cpu('process: compare, recording'):.2f}x")
    for path in (*recording, *one):
        path.unlink()
    return ratio <= TARGET_RECORDING_RATIO and trace_ratio <= TARGET_TRACE_RATIO


def bench_one_tensor_cli(folder: Path, repeat: int, elements: int = 50_000_000) -> bool:
    """A whole `pita compare` on two 200 MB one-tensor files."""
    rng = np.random.default_rng(1)
    values = rng.standard_normal(elements, dtype=np.float32)
    paths = folder / "large-reference.safetensors", folder / "large-candidate.safetensors"
    write_dump(Dump({"t": values}), paths[0])
    write_dump(Dump({"t": a_few_ulps_away(values, rng)}), paths[1])
    del values
    run = process("compare", *map(str, paths), "--atol", str(ATOL))
    run()  # warm-up: the page cache
    seconds, spread, cpu = best_of(repeat, run)
    startup, startup_spread, startup_cpu = best_of(repeat, process("--version"))
    numpy_alone, numpy_spread, numpy_cpu = best_of(repeat, lambda: subprocess.run([sys.executable, "-c", "import numpy"], check=True))
    size = paths[0].stat().st_size
    print(f"\none tensor, {size / 1e6:.0f} MB a side, whole `pita compare` process: {seconds:.3f} s ({2 * size / seconds / 1e9:.2f} GB/s, "
          f"spread {spread:.2f}x, CPU {cpu:.3f} s; {verdict(seconds, TARGET_ONE_TENSOR_SECONDS)})")
    print(f"process start-up alone (`pita --version`): {startup:.3f} s (spread {startup_spread:.2f}x, CPU {startup_cpu:.3f} s)")
    print(f"the floor, `python -c 'import numpy'`: {numpy_alone:.3f} s (spread {numpy_spread:.2f}x, CPU {numpy_cpu:.3f} s)")
    for path in paths:
        path.unlink()
    return seconds <= TARGET_ONE_TENSOR_SECONDS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, help="where to write the inputs (default: a temporary folder)")
    parser.add_argument("--only", choices=[*MODELS, "large"], help="one model, or only the 2x200 MB one-tensor pair")
    args = parser.parse_args()
    if not PITA.exists():
        raise SystemExit(f"{PITA}: not found; run this with the Python of the environment pita is installed in")
    print(f"pita compiled kernel: {'off (PITA_KERNEL=0)' if os.environ.get('PITA_KERNEL') == '0' else 'as installed'}")
    if sys.flags.dont_write_bytecode:  # as an installed pita never does
        print("warning: PYTHONDONTWRITEBYTECODE is set: every process compiles pita's sources again, and start-up is slower than a "
              "user's (PYTHONPYCACHEPREFIX=/tmp/pycache with it unset keeps the checkout clean)")
    ok = True
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        for key, model in MODELS.items():
            if args.only in (None, key):
                ok &= bench_model(model(), Path(folder), args.repeat)
        if args.only in (None, "large"):
            ok &= bench_one_tensor_cli(Path(folder), args.repeat)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
