"""p05: `x.mask_where(mask, value)` takes `value` where the mask is true: the word-for-word port of
`torch.where(mask, a, b)` as `a.mask_where(mask, b)` swaps the sources. `mask_fill` agrees."""

from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-ref", "burn-port").tensors if t.name == "out")
    return f"{row.mismatched}/{row.n} 个元素取错了来源，差 {row.max_abs_diff:.2g}"


EXPERIMENT = Experiment(
    id="p05",
    title="mask_where 的参数顺序和 torch.where 相反",
    mainline="tensors and shapes",
    kind="silent",
    symptoms=("forward-wrong",),
    related=("p10e",),
    torch_variants=("ref", "swapped"),
    burn_variants=("port", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-swapped", "burn-port")),
    sources=(
        SourceRef("burn-tensor", "src/tensor/api/base.rs", "Tensor::mask_where", "pub fn mask_where(self, mask: Tensor<D, Bool>, value: Self) -> Self"),
        SourceRef("burn-flex", "src/ops/mask.rs", "mask_where", "tensor_slice[i] = value_slice[i];"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-where-runs", "PyTorch 计算 `torch.where(mask, a, b)` 和 `a.masked_fill(mask, 0)`", "torch", "ref"),
        Accepts("burn-port-runs", "burn 计算 `a.mask_where(mask, b)`，不报错", "burn", "port"),
        Matches("port-is-swapped-where", "`a.mask_where(mask, b)` 和 `torch.where(mask, b, a)` 一致：两个来源对调了",
                "torch-swapped", "burn-port"),
        Mismatches("negative-control", "`a.mask_where(mask, b)` 对 `torch.where(mask, a, b)` 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "`torch_where(mask, a, b) = b.mask_where(mask, a)` 和 `torch.where(mask, a, b)` 一致；`mask_fill` 和 `masked_fill` 一致",
                "torch-ref", "burn-fixed"),
    ),
)
