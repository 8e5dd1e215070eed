"""p02a: `one_hot` on labels that are not classes. PyTorch's `F.one_hot` raises on any negative
label and on one >= num_classes; burn 0.22.1 wraps a label in [-C, 0) to class C + label (an
ignored -1 becomes the last class, silently), panics inside the backend's scatter for a label
below -C (-100), and panics in `one_hot`'s own check for a label >= C."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import Accepts, Claim, Experiment, Matches, Mismatches, OnlyTensorsDiffer, Panics, Raises, SourceRef


@dataclass(frozen=True)
class NegativeRows(Claim):
    """In dump `dump`, every row of `target` whose label is negative is `wrapped` (the one-hot of
    num_classes + label, Python's negative indexing) or, if not `wrapped`, all zeros."""

    id: str
    text: str
    dump: str
    wrapped: bool

    def observe(self, record, out):
        tensors = read_dump(out / f"{self.dump}.safetensors").tensors
        labels, target = tensors["labels"].astype(np.int64), tensors["target"]
        classes = target.shape[1]
        negative = np.nonzero(labels < 0)[0]
        wanted = np.zeros((len(negative), classes), dtype=target.dtype)
        if self.wrapped:
            wanted[np.arange(len(negative)), labels[negative] + classes] = 1
        rows = {int(labels[i]): target[i].astype(int).tolist() for i in negative}
        expected = "rows of negative labels = one_hot(label + num_classes)" if self.wrapped else "rows of negative labels all zero"
        return expected, f"{len(negative)} negative labels, rows {rows}", len(negative) > 0 and np.array_equal(target[negative], wanted)


def magnitude(record) -> str:
    rows = {t.name: t for t in record.comparison("torch-ref", "burn-port").tensors}
    return f"被忽略的 {rows['target'].mismatched} 个 one-hot 元素变成 1，loss 差 {rows['loss'].max_abs_diff:.3g}"


EXPERIMENT = Experiment(
    id="p02a",
    title="one_hot 遇到负标签：-1 悄悄变成最后一类，-100 在 scatter 里 panic",
    mainline="tensors and shapes",
    kind="silent",
    symptoms=("loss-wrong", "panic"),
    related=("p11b",),
    torch_variants=("ref", "direct", "direct-100", "direct-too-large"),
    burn_variants=("port", "port-100", "port-too-large", "fixed"),
    comparisons=(("torch-ref", "burn-port"), ("torch-ref", "burn-fixed")),
    sources=(
        SourceRef("burn-tensor", "src/tensor/api/orderable.rs", "Tensor::one_hot", "self.one_hot_fill(num_classes, 1.0, 0.0, -1)"),
        SourceRef("burn-tensor", "src/tensor/api/orderable.rs", "Tensor::one_hot_fill",
                  ".mask_fill(self.clone().lower_scalar(0), num_classes as i64) // Handle negative indices"),
        SourceRef("burn-tensor", "src/tensor/api/orderable.rs", "Tensor::one_hot_fill",
                  ".add(indices.clone().mask_fill(self.clone().greater_scalar(0), 0)); // Handle positive indices"),
        SourceRef("burn-tensor", "src/tensor/api/check.rs", "TensorCheck::one_hot_tensor", ".greater_equal_scalar(num_classes as i32)"),
        SourceRef("burn-flex", "src/ops/gather_scatter.rs", "index_oob", 'panic!("index {raw} out of bounds for dimension of size {dim_size}");'),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-masks", "PyTorch 先 clamp 再乘掩码，被忽略的行全 0", "torch", "ref"),
        NegativeRows("torch-ignored-rows-zero", "PyTorch 参考里标签为负的行全是 0", "torch-ref", wrapped=False),
        Raises("torch-rejects-minus-1", "PyTorch 的 `F.one_hot` 拒绝标签 -1", "torch", "direct",
               "RuntimeError", "Class values must be non-negative."),
        Raises("torch-rejects-minus-100", "PyTorch 的 `F.one_hot` 拒绝标签 -100", "torch", "direct-100",
               "RuntimeError", "Class values must be non-negative."),
        Raises("torch-rejects-too-large", "PyTorch 的 `F.one_hot` 拒绝等于类别数的标签", "torch", "direct-too-large",
               "RuntimeError", "Class values must be smaller than num_classes."),
        Accepts("burn-accepts-minus-1", "burn 的 `one_hot` 接受标签 -1，不报错", "burn", "port"),
        NegativeRows("burn-wraps", "burn 把标签 -1 编成第 num_classes - 1 类（按 Python 的负下标回绕）", "burn-port", wrapped=True),
        Panics("burn-minus-100-panics-in-scatter", "标签 -100 在 Flex 的 scatter 里 panic，报错不提 one_hot",
               "burn", "port-100", "out of bounds for dimension of size"),
        Panics("burn-too-large-panics", "等于类别数的标签在 `one_hot` 的检查里 panic", "burn", "port-too-large",
               "containing indexes greater or equal to the number of classes"),
        Mismatches("negative-control", "直接搬的 `labels.one_hot(C)` 对 PyTorch 参考报 MISMATCH", "torch-ref", "burn-port"),
        OnlyTensorsDiffer("target-and-loss-differ", "标签一致，one-hot 目标和 loss 不同", "torch-ref", "burn-port", ("loss", "target")),
        Matches("fix-matches", "先 `clamp_min(0)` 再乘 `labels >= 0` 的掩码，和 PyTorch 一致", "torch-ref", "burn-fixed"),
        NegativeRows("fixed-ignored-rows-zero", "改法里标签为负的行全是 0", "burn-fixed", wrapped=False),
    ),
)
