"""p03: burn's `transpose()` swaps the last two dims (torch `.mT`); torch `.T` on 3-D reverses all."""

from __future__ import annotations

from pita.likely import Signature
from pita_lab.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, SourceRef, Warns


def magnitude(record) -> str:
    return f"输出差 {record.comparison('torch-T', 'burn-port').result.worst:.2g}"


EXPERIMENT = Experiment(
    id="p03",
    title="transpose() 只换最后两维，PyTorch 的 .T 在 3 维上全部倒转",
    mainline="tensors and shapes",
    kind="silent",
    symptoms=("shape-axis", "forward-wrong"),
    related=("p04", "p06", "p11d"),
    signature=Signature("diagnosis", diagnosis="permutation", params=("axes",), phase="forward"),
    fix="`.T` 在 3 维以上倒转全部维度：写 `x.permute([2, 1, 0])`，只换最后两维时才用 `swap_dims`/`transpose`",
    torch_variants=("T", "mT"),
    burn_variants=("port", "fixed"),
    comparisons=(("torch-T", "burn-fixed"), ("torch-T", "burn-port"), ("torch-mT", "burn-port")),
    sources=(
        SourceRef("burn-flex", "src/ops/float.rs", "FloatTensorOps::float_transpose", "tensor.transpose(ndims - 2, ndims - 1)"),
        SourceRef("burn-backend", "src/backend/ops/tensor.rs", "FloatTensorOps::float_transpose", "float_swap_dims(tensor, ndims - 2, ndims - 1)"),
    ),
    magnitude=magnitude,
    claims=(
        Warns("torch-warns-T", "PyTorch 对 3 维张量执行 `.T`，给出弃用警告", "torch", "T",
              "UserWarning", "The use of `x.T` on tensors of dimension other than 2"),
        Accepts("burn-accepts-transpose", "burn 对这个 3 维张量执行 `transpose()`，没有警告", "burn", "port"),
        Matches("transpose-is-mT", "burn 的 `transpose()` 和 PyTorch 的 `.mT` 一致", "torch-mT", "burn-port"),
        Mismatches("negative-control", "burn 的 `transpose()` 对 PyTorch 的 `.T` 报 MISMATCH", "torch-T", "burn-port"),
        Diagnosed("compare-names-permutation", "compare 把输出诊断为参考结果换了轴的顺序",
                  "torch-T", "burn-port", "permutation"),
        Matches("fix-matches", "`permute([2, 1, 0])` 和 PyTorch 的 `.T` 一致", "torch-T", "burn-fixed"),
    ),
)
