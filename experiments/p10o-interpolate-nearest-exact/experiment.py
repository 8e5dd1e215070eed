"""p10o: PyTorch's `mode="nearest-exact"` has a burn twin, `InterpolateMode::NearestExact`, which the
Flex backend of burn 0.22.1 does not run (it panics); burn's `Nearest` is PyTorch's `"nearest"`."""

from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, Panics, SourceRef


def magnitude(record) -> str:
    out = next(t for t in record.comparison("torch-nearest-exact", "burn-nearest").tensors if t.name == "out")
    return f"NearestExact 即 panic；换成 Nearest 后 {out.mismatched}/{out.n} 个像素不同"


EXPERIMENT = Experiment(
    id="p10o",
    title="最近邻插值：`nearest-exact` 在 Flex 上 panic，换成 `Nearest` 取到另一组像素",
    fix="按 `floor((o + 0.5)·in/out)` 算下标，用 `select` 取像素（Flex 0.22.1 不支持 `NearestExact`）",
    mainline="forward",
    kind="panic",
    symptoms=("panic", "forward-wrong"),
    related=("p10", "p10k"),
    torch_variants=("nearest", "nearest-exact"),
    burn_variants=("nearest", "exact", "fixed"),
    comparisons=(
        ("torch-nearest-exact", "burn-fixed"),
        ("torch-nearest-exact", "burn-nearest"),
        ("torch-nearest", "burn-nearest"),
    ),
    sources=(
        SourceRef("burn-nn", "src/modules/interpolate/mod.rs", "InterpolateMode", "InterpolateMode::NearestExact => OpsInterpolateMode::NearestExact,"),
        SourceRef("burn-flex", "src/ops/module.rs", "interpolate", '"interpolate: unsupported mode {:?} / dtype {:?}",'),
        SourceRef("burn-flex", "src/ops/interpolate.rs", "nearest_index_map", ".map(|o| ((o as f64 * ratio).floor() as usize).min(max))"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-nearest-runs", "PyTorch 的 `mode=\"nearest\"` 正常运行", "torch", "nearest"),
        Accepts("torch-exact-runs", "PyTorch 的 `mode=\"nearest-exact\"` 正常运行", "torch", "nearest-exact"),
        Panics("exact-panics", "burn 的 `InterpolateMode::NearestExact` 在 Flex 上 panic：后端不支持这个模式",
               "burn", "exact", "interpolate: unsupported mode NearestExact"),
        Mismatches("negative-control", "换成 `InterpolateMode::Nearest`（burn-nearest）对 PyTorch 的 `nearest-exact` 报 MISMATCH",
                   "torch-nearest-exact", "burn-nearest"),
        Matches("nearest-is-nearest", "burn 的 `Nearest` 和 PyTorch 的 `mode=\"nearest\"` 在 atol 1e-6 下一致：两边都是向下取整",
                "torch-nearest", "burn-nearest"),
        Matches("fix-matches", "burn-fixed（按 `floor((o + 0.5)·in/out)` 用 `select` 取像素）和 PyTorch 的 `nearest-exact` 一致",
                "torch-nearest-exact", "burn-fixed"),
    ),
)
