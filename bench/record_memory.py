"""Benchmark: peak memory of `pita.torch.record` against the training run's own.

Issue 20's bound: recording a run keeps to the training run's own peak, plus about one shard
(`shard_bytes`), plus 100 MB; the float64 run is made after the float32 one is written and freed.
This runs, each as its own process under `/usr/bin/time -f %M` (peak RSS):
  - `train`: the same training without recording: two AdamW steps of the model, then (with
    the float64 run) the same two steps on a float64 copy taken before them, the float32 model
    alive and its optimizer and gradients freed, as `record` does with an optimizer factory;
  - `record`: `pita.torch.record(..., steps=2, float64=True)` into a temporary folder (removed
    afterwards); with `--tracemalloc`, also tracemalloc's peak: Python-side allocations only
    (the tensors held for a shard are torch's memory, which it does not see; it slows the run).
and prints the model's size, the bytes written, the times, both peaks, the bound and pass/fail.

    .venv/bin/python bench/record_memory.py                       # BERT-style, as bench/recording.py's
    .venv/bin/python bench/record_memory.py --model gpt2-medium   # ~355 M parameters; minutes, ~17 GB of disk
    .venv/bin/python bench/record_memory.py --no-float64 --shard-mb 64 --dir /tmp/x --tracemalloc

Models have random weights, built from a config in code (transformers; nothing downloaded):
  - `bert`: BertForSequenceClassification, 6 layers, hidden 256, FFN 1024, vocab 8192, batch 4 x
    128 tokens (the BERT-style mix of bench/recording.py, ~7 M parameters);
  - `gpt2-medium`: GPT2LMHeadModel, 24 layers, n_embd 1024, 16 heads, vocab 50257, batch 2 x 64
    tokens (~355 M parameters, tied embeddings); `--seq`, `--batch` change the batch.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MB = 1 << 20
SLACK_BYTES = 100_000_000  # the "plus 100 MB"
MODELS = {"bert": {"batch": 4, "seq": 128}, "gpt2-medium": {"batch": 2, "seq": 64}}


def build(name: str, batch: int, seq: int):
    """(model, inputs, targets, loss_fn) with random weights, seeded."""
    import torch
    import transformers

    torch.manual_seed(0)
    if name == "bert":
        config = transformers.BertConfig(vocab_size=8192, hidden_size=256, num_hidden_layers=6, num_attention_heads=4, intermediate_size=1024,
                                         max_position_embeddings=512, num_labels=3, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                         attn_implementation="eager")
        model = transformers.BertForSequenceClassification(config)
        targets = torch.randint(0, 3, (batch,))

        def loss_fn(output, targets):
            return torch.nn.functional.cross_entropy(output.logits, targets)
    else:
        config = transformers.GPT2Config(vocab_size=50257, n_positions=1024, n_embd=1024, n_layer=24, n_head=16, resid_pdrop=0.0, embd_pdrop=0.0,
                                         attn_pdrop=0.0, attn_implementation="eager")
        model = transformers.GPT2LMHeadModel(config)
        targets = torch.randint(0, config.vocab_size, (batch, seq))

        def loss_fn(output, targets):
            return torch.nn.functional.cross_entropy(output.logits.flatten(0, 1), targets.flatten())
    model.train()
    tokens = torch.randint(0, config.vocab_size, (batch, seq))
    return model, (tokens,), targets, loss_fn


def adamw(params):
    import torch

    return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01)


def child_train(args) -> dict:
    """Two AdamW steps (and the float64 copy's two), nothing recorded."""
    import torch

    model, inputs, targets, loss_fn = build(args.model, args.batch, args.seq)
    started = time.perf_counter()
    twin = copy.deepcopy(model) if args.float64 else None  # record keeps the model as it was for its float64 run
    optimizer = adamw(model.parameters())
    for _ in range(2):
        model.zero_grad(set_to_none=True)
        loss_fn(model(*inputs), targets).backward()
        optimizer.step()
    if twin is not None:
        del optimizer  # record builds its own from the factory and drops it, and the gradients, before its float64 run
        model.zero_grad(set_to_none=True)
        twin = twin.to(torch.float64)
        optimizer64 = adamw(twin.parameters())
        for _ in range(2):
            twin.zero_grad(set_to_none=True)
            loss_fn(twin(*inputs), targets).backward()
            optimizer64.step()
    return {"seconds": time.perf_counter() - started}


def child_record(args) -> dict:
    import tracemalloc

    import pita.torch

    model, inputs, targets, loss_fn = build(args.model, args.batch, args.seq)
    parameters = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    if args.tracemalloc:
        tracemalloc.start()
    started = time.perf_counter()
    written = pita.torch.record(model, inputs, targets, loss_fn, Path(args.dir) / "record.safetensors", adamw, 2,
                                float64=args.float64, shard_bytes=args.shard_mb * MB)
    seconds = time.perf_counter() - started
    traced = tracemalloc.get_traced_memory()[1] if args.tracemalloc else None
    files = [Path(args.dir) / name for name in os.listdir(args.dir)]
    return {"seconds": seconds, "parameters": parameters, "written": written.name, "files": len(files),
            "bytes_written": sum(f.stat().st_size for f in files), "tracemalloc_peak": traced}


def measured(args, kind: str, folder: str) -> tuple[dict, int]:
    """Runs one child under /usr/bin/time; its JSON result and its peak RSS in bytes."""
    command = ["/usr/bin/time", "-f", "%M", sys.executable, __file__, "--child", kind, "--model", args.model, "--batch", str(args.batch),
               "--seq", str(args.seq), "--shard-mb", str(args.shard_mb), "--dir", folder]
    command += [] if args.float64 else ["--no-float64"]
    command += ["--tracemalloc"] if args.tracemalloc else []
    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PITA_PROGRESS": "0"})
    if proc.returncode != 0:
        sys.exit(f"{kind} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), int(proc.stderr.strip().splitlines()[-1]) * 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="bert")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--seq", type=int)
    parser.add_argument("--shard-mb", type=int, default=256, help="shard_bytes, in MiB (default 256, record's default)")
    parser.add_argument("--no-float64", dest="float64", action="store_false", help="record without the float64 run")
    parser.add_argument("--tracemalloc", action="store_true", help="also report tracemalloc's peak (Python-side allocations; slower)")
    parser.add_argument("--dir", help="where the recording goes (a temporary folder, removed, by default)")
    parser.add_argument("--child", choices=("train", "record"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.batch = args.batch or MODELS[args.model]["batch"]
    args.seq = args.seq or MODELS[args.model]["seq"]
    if args.child:
        print(json.dumps((child_train if args.child == "train" else child_record)(args)))
        return 0
    folder = tempfile.mkdtemp(prefix="pita-record-memory-", dir=args.dir)
    try:
        trained, train_peak = measured(args, "train", folder)
        recorded, record_peak = measured(args, "record", folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    bound = train_peak + args.shard_mb * MB + SLACK_BYTES
    print(f"model: {args.model}, {recorded['parameters'] / 1e6:.1f} M parameters, batch {args.batch} x {args.seq} tokens, "
          f"float64 run: {'yes' if args.float64 else 'no'}, shard_bytes {args.shard_mb} MiB")
    print(f"written: {recorded['bytes_written'] / MB:.0f} MiB in {recorded['files']} files ({recorded['written']} and beside it)")
    print(f"time: training {trained['seconds']:.1f} s, recording {recorded['seconds']:.1f} s")
    print(f"peak RSS: training alone {train_peak / MB:.0f} MiB, with recording {record_peak / MB:.0f} MiB "
          f"(+{(record_peak - train_peak) / MB:.0f} MiB)")
    if recorded["tracemalloc_peak"] is not None:
        print(f"tracemalloc peak (Python-side allocations; torch's tensors are not traced) {recorded['tracemalloc_peak'] / MB:.0f} MiB")
    within = record_peak <= bound
    print(f"bound: training's peak + one shard + 100 MB = {bound / MB:.0f} MiB: {'PASS' if within else 'FAIL'}")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
