"""p15: a tied maximum. PyTorch's full max() and torch.maximum split the gradient evenly over the
ties; burn's max() and max_pair give all of it to one element."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import (
    Accepts,
    Experiment,
    Matches,
    Mismatches,
    PairClaim,
    Panics,
    SourceRef,
    TensorsCompare,
)


@dataclass(frozen=True)
class SameGradientMass(PairClaim):
    """Each group's gradients add up to the same on both sides: a group of one tensor is summed
    over its elements; a group of several same-shaped tensors is summed element by element
    (the gradient each output element hands out, whoever receives it)."""

    groups: tuple[tuple[str, ...], ...]
    atol: float = 1e-6

    def observe(self, record, out):
        dumps = [read_dump(out / f"{name}.safetensors") for name in (self.reference, self.candidate)]
        expected, observed, ok = [], [], True
        for group in self.groups:
            totals = []
            for dump in dumps:
                stacked = np.stack([dump.tensors[name].astype(np.float64).ravel() for name in group])
                totals.append(stacked.sum(axis=0) if len(group) > 1 else stacked.sum(keepdims=True)[0])
            same = bool(np.allclose(totals[0], totals[1], rtol=0, atol=self.atol))
            ok = ok and same
            label = " + ".join(group) if len(group) > 1 else f"sum({group[0]})"
            expected.append(f"{label} equal")
            observed.append(f"{label}: {totals[0].tolist()} vs {totals[1].tolist()}")
        return "; ".join(expected), "; ".join(observed), ok


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-ref", "burn-port").tensors if t.name == "max.grad")
    return f"并列最大处梯度 {row.worst_candidate:g} 对 {row.worst_reference:g}"


EXPERIMENT = Experiment(
    id="p15",
    title="最大值并列时，burn 把梯度全给一个，PyTorch 平分",
    mainline="backward",
    kind="silent",
    symptoms=("grad-at-kinks",),
    related=("p13", "p14"),
    torch_variants=("ref",),
    burn_variants=("port", "fixed", "guard"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-backend", "src/backend/ops/tensor.rs", "FloatTensorOps::float_max", "B::float_max_dim(tensor, 0)"),
        SourceRef("burn-autodiff", "src/ops/tensor.rs", "FloatTensorOps::float_max_dim", "B::float_max_dim_with_indices(tensor.primitive, dim"),
        SourceRef("burn-autodiff", "src/ops/maxmin.rs", "MaxMinDim::backward", "B::float_scatter(dim, zeros, indices, grad"),
        SourceRef("burn-tensor", "src/tensor/api/orderable.rs", "Tensor::max_pair", "self.mask_where(mask, other)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 计算 `max()`、`max(dim)` 和 `maximum` 的梯度", "torch", "ref"),
        Accepts("burn-port-runs", "burn 的直接移植正常运行，没有警告", "burn", "port"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        SameGradientMass("same-mass-other-split", "两边分出的梯度总量相同，只是在并列元素之间的分配不同",
                         "torch-ref", "burn-port", (("max.grad",), ("maximum.a.grad", "maximum.b.grad"))),
        TensorsCompare("max-dim-agrees", "沿一维的 max 一致：PyTorch 的 `max(dim)` 也只选一个下标",
                     "torch-ref", "burn-port", ("max_dim.grad",)),
        Matches("fix-matches", "平分并列梯度的 `max` 和 `max_pair` 在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
        Panics("guard-panics-on-tie", "`assert_unique_max` 拦下并列的最大值",
               "burn", "guard", "tied maximum: burn and PyTorch split its gradient differently"),
    ),
)
