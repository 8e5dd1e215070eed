"""p10: burn's bilinear interpolation defaults to align_corners = true; PyTorch's to False."""

from pita.likely import Signature
from pita_lab.experiment import Accepts, DefaultsDiffer, Experiment, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    rows = record.comparison("torch-ref", "burn-port").tensors
    out = next(t for t in rows if t.name == "out")
    return f"输出差 {out.max_abs_diff:.2g}"


EXPERIMENT = Experiment(
    id="p10",
    title="双线性插值默认对齐角点，PyTorch 默认不对齐",
    fix="`.with_align_corners(false)`（`F.interpolate` / `nn.Upsample` 的默认）",
    mainline="forward",
    kind="silent",
    symptoms=("forward-wrong",),
    related=("p10a",),
    reports=('tracel-ai/burn#4510',),
    signature=Signature("setting", settings=("Upsample.align_corners",)),
    torch_variants=("ref",),
    burn_variants=("port", "fn-port", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-ref", "burn-fn-port")),
    sources=(
        SourceRef("burn-nn", "src/modules/interpolate/interpolate2d.rs", "Interpolate2d::forward", ".with_align_corners(self.align_corners);"),
        SourceRef("burn-std", "src/ops.rs", "InterpolateOptions::new", "align_corners: true,"),
        SourceRef("burn-flex", "src/ops/interpolate.rs", "coord_ratio", "(in_size as f64 - 1.0) / (out_size.max(1) - 1).max(1) as f64"),
        SourceRef("burn-flex", "src/ops/interpolate.rs", "map_coord", "(out_coord as f64 + 0.5) * ratio - 0.5"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 `F.interpolate`（bilinear）用默认的 `align_corners` 正常运行", "torch", "ref"),
        Accepts("burn-port-runs", "burn 的 `Interpolate2d`（Linear 模式）用默认配置正常运行", "burn", "port"),
        DefaultsDiffer("align-corners-differs", "默认的 `align_corners` 两边不同（PyTorch 从 `F.interpolate` 的签名读出）",
                       "torch-ref", "burn-port", "align_corners",
                       "插值的 `align_corners`（`Interpolate2dConfig` / `F.interpolate`；PyTorch 的 `None` 按 `False` 算）",
                       maps=("Upsample.align_corners", "Interpolate2d.align_corners")),
        DefaultsDiffer("fn-align-corners-differs", "`InterpolateOptions::new` 的 `align_corners` 和 `F.interpolate` 也不同",
                       "torch-ref", "burn-fn-port", "align_corners",
                       "插值函数的 `align_corners`（`InterpolateOptions::new` / `F.interpolate`）"),
        Mismatches("negative-control", "burn-port（`Interpolate2d` 默认配置）对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Mismatches("fn-port-differs-too", "burn-fn-port（`InterpolateOptions::new` 默认值）对 torch-ref 报 MISMATCH",
                   "torch-ref", "burn-fn-port"),
        Matches("fix-matches", "burn-fixed（`align_corners` 为 false）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
    ),
)
