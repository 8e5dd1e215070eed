"""p10m: the coordinate mapping of `InterpolateOptions` (burn 0.23's `CoordinateTransformMode`):
bilinear and bicubic default to align-corners, PyTorch's `F.interpolate` to half-pixel; the mapping
named after PyTorch (`PytorchHalfPixel`) is not PyTorch's on a one-pixel axis, and 0.22.1 has
only `align_corners`."""

from dataclasses import dataclass

from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, SideClaim, SourceRef
from pita_lab.matrix import API_ABSENT_EXIT

# The line `pita_lab::compat::api_absent` prints (lab/burn/src/compat.rs), as the matrix reads it.
API_ABSENT_PREFIX = "burn api absent: "


@dataclass(frozen=True)
class ApiAbsent(SideClaim):
    """A burn variant stops as `pita_lab::compat::api_absent` does: exit 64, naming `api` on stderr
    (the burn it was built against has no such API)."""

    api: str

    def observe(self, record, out):
        run = record.program(self.side, self.variant)
        said = next((line for line in run.stderr.splitlines() if line.startswith(API_ABSENT_PREFIX)), "")
        observed = f"exit {run.exit_code}: {said or 'no api-absent line'}"
        return f"exit {API_ABSENT_EXIT}: {API_ABSENT_PREFIX}{self.api}", observed, run.exit_code == API_ABSENT_EXIT and said.startswith(
            f"{API_ABSENT_PREFIX}{self.api} ")


def magnitude(record) -> str:
    worst = max(record.comparison("torch-ref", "burn-port").tensors, key=lambda t: t.max_abs_diff)
    return f"{worst.name} 输出差 {worst.max_abs_diff:.2g}"


EXPERIMENT = Experiment(
    id="p10m",
    title="插值的坐标映射：默认对齐角点，`PytorchHalfPixel` 也不等于 PyTorch 的默认",
    fix="`HalfPixel`（0.22.1：`.with_align_corners(false)`；0.23：`.with_coordinate_transform(CoordinateTransformMode::HalfPixel)`）",
    mainline="forward",
    kind="silent",
    symptoms=("forward-wrong",),
    related=("p10", "p10k", "p10o"),
    torch_variants=("ref",),
    burn_variants=("port", "half-pixel", "pytorch-half-pixel"),
    comparisons=(("torch-ref", "burn-half-pixel"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-std", "src/ops.rs", "InterpolateOptions::new", "align_corners: true,"),
        SourceRef("burn-std", "src/ops.rs", "InterpolateOptions", "pub align_corners: bool,"),
        SourceRef("burn-flex", "src/ops/interpolate.rs", "map_coord", "(out_coord as f64 + 0.5) * ratio - 0.5"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 `F.interpolate`（bilinear、bicubic）用默认的坐标映射正常运行", "torch", "ref"),
        Accepts("burn-port-runs", "burn 的 `interpolate` 用 `InterpolateOptions::new(mode)` 的默认映射正常运行", "burn", "port"),
        Mismatches("negative-control", "默认映射（burn-port）对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "`HalfPixel`（burn-half-pixel）在 atol 1e-6 下和 torch-ref 一致，一个像素的输出也一致",
                "torch-ref", "burn-half-pixel"),
        ApiAbsent("pytorch-half-pixel-absent", "burn 0.22.1 没有 `CoordinateTransformMode`：`PytorchHalfPixel` 无法表达，程序按 api_absent 退出",
                  "burn", "pytorch-half-pixel", "burn::tensor::ops::CoordinateTransformMode"),
    ),
)
