"""p10k: `interpolate` with a scale factor whose output size is fractional: burn floors the size
and samples with in/out, PyTorch samples with 1/scale. burn has no `antialias`."""

import re
from dataclasses import dataclass

import numpy as np

from pita_lab.experiment import (
    Accepts,
    Claim,
    Experiment,
    Matches,
    Mismatches,
    OnlyTensorsDiffer,
    PairClaim,
    SourceRef,
)

# The tensors whose input side times the scale factor is not a whole number, and which the
# sampling step therefore moves (nearest only when a floor crosses an integer: not at 1.5).
FRACTIONAL = ("bicubic.down", "bicubic.up", "bilinear.down", "bilinear.up", "nearest.down")


@dataclass(frozen=True)
class SameShapes(PairClaim):
    """Every tensor of the comparison has the same shape on both sides: the sizes agree, only the
    values can differ."""

    def observe(self, record, out):
        rows = record.comparison(self.reference, self.candidate).tensors
        shapes = [f"{t.name} {t.shape}" + ("" if t.shape == t.candidate_shape else f" vs {t.candidate_shape}")
                  for t in rows]
        ok = bool(rows) and all(t.shape == t.candidate_shape for t in rows)
        return "every tensor the same shape on both sides", "; ".join(shapes), ok


@dataclass(frozen=True)
class BitIdentical(PairClaim):
    """The two dumps hold the same tensor names and every tensor bit for bit: the same kernel ran
    on the same input in one run, whichever way the size was given."""

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        names = sorted(reference.tensors)
        same = [name for name in names
                if name in candidate.tensors and np.array_equal(reference.tensors[name], candidate.tensors[name])]
        observed = f"{len(same)}/{len(names)} tensors bit-identical" + (
            "" if sorted(candidate.tensors) == names else f"; names differ: {sorted(candidate.tensors)}")
        return f"all {len(names)} tensors bit-identical", observed, same == names and sorted(candidate.tensors) == names


@dataclass(frozen=True)
class StructLacksField(Claim):
    """In the locked source of `crate`, the struct `name` has no field `field`; the observation
    lists the fields it has. A burn release that adds the field fails the claim."""

    id: str
    text: str
    crate: str
    file: str
    name: str
    field: str

    def observe(self, record, out):
        from pita_lab import repo_root
        from pita_lab.rust_source import locked_file

        version, source = locked_file(repo_root(), self.crate, self.file)
        body = re.search(rf"pub struct {re.escape(self.name)}\s*\{{(.*?)\n\}}", source, re.DOTALL)
        if body is None:
            return f"struct {self.name} without {self.field}", f"no struct {self.name} in {self.crate} {version} {self.file}", False
        fields = re.findall(r"^\s*pub\s+([a-z_][a-z0-9_]*)\s*:", body.group(1), re.MULTILINE)
        observed = f"{self.crate} {version} {self.file}: {self.name} {{{', '.join(fields)}}}"
        return f"{self.name} has no field {self.field}", observed, bool(fields) and self.field not in fields


def magnitude(record) -> str:
    rows = record.comparison("torch-ref", "burn-port").tensors
    worst = max((t for t in rows if not t.ok), key=lambda t: t.max_abs_diff)
    return f"{worst.name} 输出差 {worst.max_abs_diff:.2g}，尺寸相同"


EXPERIMENT = Experiment(
    id="p10k",
    title="插值的非整数 scale_factor：尺寸相同，取样位置不同",
    mainline="forward",
    kind="silent",
    symptoms=("forward-wrong",),
    related=("p10",),
    torch_variants=("ref", "recompute", "antialias"),
    burn_variants=("port", "size", "fixed"),
    comparisons=(
        ("torch-ref", "burn-fixed"),
        ("torch-ref", "burn-port"),
        ("torch-recompute", "burn-port"),
        ("torch-ref", "torch-antialias"),
    ),
    sources=(
        SourceRef("burn-tensor", "src/tensor/module.rs", "interpolate_output_size", "size as usize"),
        SourceRef("burn-flex", "src/ops/interpolate.rs", "coord_ratio", "in_size as f64 / out_size as f64"),
        SourceRef("burn-flex", "src/ops/interpolate.rs", "map_coord", "(out_coord as f64 + 0.5) * ratio - 0.5"),
        SourceRef("burn-flex", "src/ops/interpolate.rs", "nearest_index_map", "let ratio = in_size as f64 / out_size as f64;"),
        SourceRef("burn-std", "src/ops.rs", "InterpolateOptions", "Backends ignore this field."),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 `F.interpolate` 按 `scale_factor` 插值，正常运行", "torch", "ref"),
        Accepts("burn-port-runs", "burn 的 `Interpolate2d` 按 `scale_factor` 插值，正常运行", "burn", "port"),
        SameShapes("sizes-agree", "两边每个输出的尺寸都相同（都是 floor(边长 × scale)）", "torch-ref", "burn-port"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        OnlyTensorsDiffer("only-fractional-sizes-differ",
                          "只有「边长 × scale」不是整数的输出不同；4×4 放大 1.5 倍和最近邻放大 1.5 倍两边一致",
                          "torch-ref", "burn-port", FRACTIONAL),
        Matches("burn-is-recompute", "burn-port 和 PyTorch 的 `recompute_scale_factor=True` 在 atol 1e-6 下一致：burn 按 in/out 取样",
                "torch-recompute", "burn-port"),
        BitIdentical("size-changes-nothing", "burn 里直接给输出尺寸（burn-size）和给 `scale_factor` 逐位相同", "burn-port", "burn-size"),
        Matches("fix-matches", "burn-fixed（按 1/scale 建插值矩阵）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
        OnlyTensorsDiffer("antialias-changes-output", "PyTorch 的 `antialias=True` 改变缩小的 bilinear 输出和所有 bicubic 输出（放大的也变）",
                          "torch-ref", "torch-antialias", ("bicubic.down", "bicubic.even", "bicubic.up", "bilinear.down")),
        StructLacksField("burn-has-no-antialias", "burn 的 `InterpolateOptions` 没有 `antialias` 字段",
                         "burn-std", "src/ops.rs", "InterpolateOptions", "antialias"),
        StructLacksField("module-has-no-antialias", "burn 的 `Interpolate2dConfig` 也没有 `antialias`",
                         "burn-nn", "src/modules/interpolate/interpolate2d.rs", "Interpolate2dConfig", "antialias"),
    ),
)
