"""p10n: GroupNorm in float16 with 65 536 values per group (tracel-ai/burn#5382). burn 0.22.1's
GroupNorm widens a float16 input to float32 for the statistics and takes the mean with `mean_dim`:
on Flex it agrees with PyTorch's float16 GroupNorm; a sum and `div_scalar` in float16 gives NaN."""

from dataclasses import dataclass

from pita.dump import read_dump
from pita_lab.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, SideClaim, SourceRef


@dataclass(frozen=True)
class TensorDtype(SideClaim):
    """Tensor `tensor` of the variant's dump has the dtype `dtype` (its safetensors name): the
    computation ran in that precision, not silently in another."""

    tensor: str
    dtype: str

    def observe(self, record, out):
        dump = read_dump(out / f"{self.side}-{self.variant}.safetensors")
        found = str(dump.tensors[self.tensor].dtype)
        names = {"float16": "F16", "float32": "F32", "float64": "F64"}
        return f"{self.tensor}: {self.dtype}", f"{self.tensor}: {names.get(found, found)}", names.get(found, found) == self.dtype


def magnitude(record) -> str:
    worst = record.comparison("torch-f16", "burn-f16").result.worst
    return f"float16 两边差 {worst:.2g}；sum 再 div_scalar 得 NaN"


EXPERIMENT = Experiment(
    id="p10n",
    title="float16 的 GroupNorm：burn 0.22.1 和 PyTorch 一致，先求和再除就得 NaN",
    fix="用 `GroupNorm`（0.22.1 把统计量放到 float32 里算）；自己写时用 `mean_dim`，或先 `cast` 到 float32",
    mainline="forward",
    kind="same",
    symptoms=("nan", "forward-wrong"),
    related=("p29",),
    reports=("tracel-ai/burn#5382",),
    torch_variants=("f32", "f16"),
    burn_variants=("f16", "f32", "sum-div"),
    comparisons=(
        ("torch-f16", "burn-f16"),
        ("torch-f32", "burn-f16"),
        ("torch-f32", "burn-f32"),
        ("torch-f16", "burn-sum-div"),
    ),
    sources=(
        SourceRef("burn-nn", "src/modules/norm/group.rs", "group_norm", "let widened = accumulation_dtype(input.dtype());"),
        SourceRef("burn-nn", "src/modules/norm/group.rs", "group_norm", "let mean = input.clone().mean_dim(2);"),
        SourceRef("burn-nn", "src/modules/norm/mod.rs", "accumulation_dtype", "matches!(input, DType::F16).then_some(FloatDType::F32)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-f16-runs", "PyTorch 的 GroupNorm 在 float16 上正常运行", "torch", "f16"),
        Accepts("burn-f16-runs", "burn 的 GroupNorm 在 Flex 的 float16 张量上正常运行", "burn", "f16"),
        TensorDtype("burn-output-f16", "burn 的输出是 float16：整个模块跑在 float16 上，不是悄悄换成了 float32",
                    "burn", "f16", "out", "F16"),
        Matches("f16-matches", "burn 的 float16 GroupNorm 和 PyTorch 的 float16 GroupNorm 在 float16 的默认容差下一致",
                "torch-f16", "burn-f16"),
        Matches("f16-matches-f32", "burn 的 float16 输出和 PyTorch 的 float32 输出在 float16 的默认容差下一致", "torch-f32", "burn-f16"),
        Matches("f32-matches", "float32 上两边在 atol 1e-6 下一致", "torch-f32", "burn-f32"),
        Mismatches("negative-control", "在 float16 里先 `sum_dim` 再 `div_scalar`（burn-sum-div）对 PyTorch 报 MISMATCH", "torch-f16", "burn-sum-div"),
        Diagnosed("sum-div-nan", "compare 在 burn-sum-div 的输出里发现 NaN，PyTorch 那边是数", "torch-f16", "burn-sum-div", "nan",
                  params=(("side", "candidate"),), tensors=("out",)),
    ),
)
