"""p04a: a `0` in `reshape`'s shape. burn 0.22.1 reads it as "keep the input's size at this
position" (ONNX's `allowzero=0`); PyTorch reads it as a zero-size axis. An empty selection
reshaped to `[batch, kept, dim]` with `kept = 0` panics in burn, naming a shape the program never
wrote; with an empty batch too it silently gets another shape. burn 0.23.0-pre.1 makes the zero
literal (the old reading is opt-in, `ZeroDimPlaceholders`), so `[0, -1]` stops keeping an axis."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.claims import SideClaim, panic_message
from pita_lab.experiment import Accepts, Claim, Experiment, Matches, Mismatches, Panics, SourceRef
from pita_lab.record import last_line


def _zeros_copied(written: list[int], source: list[int]) -> list[int]:
    """The shape burn 0.22.1 resolves: each `0` of `written` replaced by `source`'s size there."""
    return [source[i] if size == 0 else size for i, size in enumerate(written)]


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).ravel()]


@dataclass(frozen=True)
class RaisesStarting(SideClaim):
    """A PyTorch variant stops with an exception whose last traceback line starts with `start` (the
    rest of the message names the input's size, which the claim does not type)."""

    start: str

    def observe(self, record, out):
        run = record.program(self.side, self.variant)
        observed = last_line(run.stderr) if run.exit_code != 0 else f"exit 0: {last_line(run.stdout)}"
        return f"{self.start}…", observed, run.exit_code != 0 and observed.startswith(self.start)


@dataclass(frozen=True)
class ZerosCopyInput(Claim):
    """`candidate`'s shape is `reference`'s (the shape PyTorch built from the same numbers) with
    each zero replaced by the input's size at that position."""

    id: str
    text: str
    reference: str
    candidate: str

    def observe(self, record, out):
        reference = read_dump(out / f"{self.reference}.safetensors").tensors
        candidate = read_dump(out / f"{self.candidate}.safetensors").tensors
        written, source = _ints(reference["shape"]), _ints(reference["input_shape"])
        wanted, got = _zeros_copied(written, source), _ints(candidate["shape"])
        return (f"{self.candidate} shape = {written} with zeros copied from input {source} = {wanted}",
                f"{self.candidate} shape {got}", got == wanted and got != written)


@dataclass(frozen=True)
class PanicNamesCopiedShape(Claim):
    """The panic of burn `variant` names, as its target shape, the shape PyTorch built in dump
    `reference` with each zero replaced by the input's size there: not the shape the program wrote."""

    id: str
    text: str
    variant: str
    reference: str

    def _shapes(self, record, out) -> dict:
        reference = read_dump(out / f"{self.reference}.safetensors").tensors
        written, source = _ints(reference["shape"]), _ints(reference["input_shape"])
        message = panic_message(record.program("burn", self.variant).stderr)
        found = re.search(r"Current shape: \[([\d, ]*)\], target shape: \[([\d, ]*)\]", message)
        current, target = ([int(v) for v in group.split(",") if v.strip()] for group in found.groups()) if found else (None, None)
        return {"written": written, "input": source, "copied": _zeros_copied(written, source), "current": current, "target": target}

    def observe(self, record, out):
        shapes = self._shapes(record, out)
        expected = f"current {shapes['input']}, target {shapes['copied']} (written {shapes['written']})"
        if shapes["target"] is None:
            return expected, "no shapes in the panic message", False
        ok = shapes["current"] == shapes["input"] and shapes["target"] == shapes["copied"] and shapes["target"] != shapes["written"]
        return expected, f"current {shapes['current']}, target {shapes['target']}", ok

    def facts(self, record, out):
        return self._shapes(record, out)


EXPERIMENT = Experiment(
    id="p04a",
    title="reshape 里的 0：burn 0.22 当「保留这一维」，PyTorch 当长度 0",
    mainline="tensors and shapes",
    kind="panic",
    symptoms=("panic", "shape-axis"),
    related=("p04", "p06"),
    torch_variants=("ref", "empty-batch", "flatten", "zero-minus-one"),
    burn_variants=("port", "port-empty-batch", "fixed", "fixed-empty-batch", "keep-axis", "keep-axis-explicit"),
    comparisons=(
        ("torch-empty-batch", "burn-port-empty-batch"),
        ("torch-ref", "burn-fixed"),
        ("torch-empty-batch", "burn-fixed-empty-batch"),
        ("torch-flatten", "burn-keep-axis"),
        ("torch-flatten", "burn-keep-axis-explicit"),
    ),
    sources=(
        SourceRef("burn-tensor", "src/tensor/api/base.rs", "ReshapeArgs", "unwrap_shape_reshape(source.reshape(self))"),
        SourceRef("cubecl-zspace", "src/shape.rs", "Shape::reshape", "} else if s == 0 {"),
        SourceRef("cubecl-zspace", "src/shape.rs", "Shape::reshape", "let s = self.dims[idx];"),
        SourceRef("cubecl-zspace", "src/shape.rs", "Shape::reshape", "The given shape doesn't have the same number of elements"),
    ),
    claims=(
        Accepts("torch-reshapes", "PyTorch 把空的 [0, 4] reshape 成 [2, 0, 4]", "torch", "ref"),
        Panics("burn-panics", "burn 对同一个 reshape panic：元素个数对不上", "burn", "port",
               "The given shape doesn't have the same number of elements as the current shape"),
        PanicNamesCopiedShape("panic-names-copied-shape", "panic 里的目标形状是把 0 换成输入那一维的大小，不是程序写的形状",
                              "port", "torch-ref"),
        Mismatches("negative-control", "batch 也为 0 时 burn 不 panic，形状对 PyTorch 报 MISMATCH",
                   "torch-empty-batch", "burn-port-empty-batch"),
        ZerosCopyInput("empty-batch-copies", "这时 burn 的形状就是把 0 换成输入那一维的大小", "torch-empty-batch", "burn-port-empty-batch"),
        Matches("fix-matches", "形状里有 0 就直接建空张量，和 PyTorch 一致", "torch-ref", "burn-fixed"),
        Matches("fix-matches-empty-batch", "batch 为 0 时改法也和 PyTorch 一致", "torch-empty-batch", "burn-fixed-empty-batch"),
        RaisesStarting("torch-rejects-zero-minus-one", "PyTorch 不接受 `reshape(0, -1)`：0 是长度，-1 推不出来", "torch", "zero-minus-one",
                       "RuntimeError: shape '[0, -1]' is invalid for input of size "),
        Matches("keep-axis-is-flatten", "burn 0.22.1 的 `reshape([0, -1])` 保留第 0 维，和 PyTorch 的 `x.reshape(x.shape[0], -1)` 一致",
                "torch-flatten", "burn-keep-axis"),
        Matches("explicit-axis-is-flatten", "写成显式的 `[x.dims()[0], -1]`，和 PyTorch 一致，不依赖 0 的含义",
                "torch-flatten", "burn-keep-axis-explicit"),
    ),
)
