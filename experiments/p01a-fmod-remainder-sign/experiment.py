"""p01a: `torch.fmod` keeps the dividend's sign, `%` the divisor's. burn's `%` is `remainder` (not
Rust's f32 `%`), and burn 0.22.1's `fmod` is `x - y * trunc(x / y)`: where the rounded quotient
lands on an integer it is off by a whole `|y|`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import Accepts, Claim, Experiment, Matches, Mismatches, OnlyTensorsDiffer, SourceRef, TensorsCompare


def _tensors(out, dump: str) -> dict[str, np.ndarray]:
    return read_dump(out / f"{dump}.safetensors").tensors


@dataclass(frozen=True)
class SignFollows(Claim):
    """Every nonzero element of `tensor` in `dump` has the sign of the dump's `operand` (x or y)."""

    id: str
    text: str
    dump: str
    tensor: str
    operand: str

    def observe(self, record, out):
        tensors = _tensors(out, self.dump)
        values, operand = tensors[self.tensor], tensors[self.operand]
        nonzero = values != 0
        against = int(np.count_nonzero(np.sign(values[nonzero]) != np.sign(operand[nonzero])))
        expected = f"sign({self.tensor}) = sign({self.operand}) where {self.tensor} != 0"
        return expected, f"{int(nonzero.sum())} nonzero, {against} of them against the sign of {self.operand}", nonzero.any() and against == 0


@dataclass(frozen=True)
class FmodComputedAs(Claim):
    """`tensor` of `dump` is, bit for bit, `how` evaluated in float32 from the dump's own x and y:
    `composed`, `x - y * trunc(x / y)` (a rounded division, a truncation, a rounded product and a
    rounded difference, each a correctly rounded IEEE operation), or `exact`, C's fmod (`np.fmod`,
    whose result is exact). Both are the same on every machine."""

    id: str
    text: str
    dump: str
    tensor: str
    how: str

    def _counts(self, out) -> dict[str, int]:
        tensors = _tensors(out, self.dump)
        x, y = tensors["x"].astype(np.float32), tensors["y"].astype(np.float32)
        composed, exact = x - y * np.trunc(x / y), np.fmod(x, y)
        wanted = composed if self.how == "composed" else exact
        got = tensors[self.tensor].astype(np.float32)
        return {"n": int(got.size), "differing": int(np.count_nonzero(wanted != got)),
                "composed_not_exact": int(np.count_nonzero(composed != exact))}

    def observe(self, record, out):
        counts = self._counts(out)
        formula = "x - y*trunc(x/y) in float32" if self.how == "composed" else "C fmod (np.fmod)"
        observed = f"{counts['differing']} of {counts['n']} elements differ from it; the two formulas differ on {counts['composed_not_exact']}"
        return f"{self.dump}.{self.tensor} = {formula}, bit for bit", observed, counts["differing"] == 0

    def facts(self, record, out):
        return self._counts(out)


@dataclass(frozen=True)
class OffByDivisor(Claim):
    """Somewhere `candidate.tensor` differs from `reference.tensor` by more than half the divisor:
    a whole period, not a rounding error."""

    id: str
    text: str
    reference: str
    candidate: str
    tensor: str

    def _gaps(self, out) -> tuple[np.ndarray, np.ndarray]:
        reference, candidate = _tensors(out, self.reference), _tensors(out, self.candidate)
        gap = np.abs(reference[self.tensor].astype(np.float64) - candidate[self.tensor].astype(np.float64))
        return gap, gap > np.abs(reference["y"].astype(np.float64)) / 2

    def observe(self, record, out):
        gap, whole = self._gaps(out)
        return (f"|{self.candidate} - {self.reference}| > |y|/2 somewhere",
                f"{int(whole.sum())} of {gap.size} elements, at most {float(gap.max()):.9g}", bool(whole.any()))

    def facts(self, record, out):
        gap, whole = self._gaps(out)
        return {"whole": int(whole.sum()), "rounding": int(np.count_nonzero((gap > 0) & ~whole)), "n": int(gap.size)}


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-ref", "burn-port").tensors if t.name == "fmod")
    return f"fmod 差 {row.max_abs_diff:.9g}（{row.mismatched}/{row.n} 个元素）"


EXPERIMENT = Experiment(
    id="p01a",
    title="fmod 和 remainder 的符号约定，burn 的 fmod 由截断商拼成",
    mainline="tensors and shapes",
    kind="silent",
    symptoms=("forward-wrong",),
    related=("p01",),
    torch_variants=("ref",),
    burn_variants=("port", "percent", "fixed"),
    comparisons=(
        ("torch-ref", "burn-port"),
        ("torch-ref", "burn-fixed"),
        ("torch-ref", "burn-percent"),
    ),
    sources=(
        SourceRef("burn-tensor", "src/tensor/api/fmod.rs", "Tensor::fmod", "// Normal case: fmod(x, y) = x - y * trunc(x / y)"),
        SourceRef("burn-tensor", "src/tensor/api/fmod.rs", "Tensor::fmod", "let truncated = quotient.trunc();"),
        SourceRef("burn-tensor", "src/tensor/api/numeric.rs", "Rem::rem", "Tensor::remainder(self, rhs)"),
        SourceRef("burn-flex", "src/ops/float.rs", "remainder_float", "let r = a % b;"),
        SourceRef("burn-flex", "src/ops/float.rs", "remainder_float", "r + b"),
        SourceRef("burn-tensor", "src/tensor/api/fmod.rs", "Tensor", "impl<const D: usize> Tensor<D, Float> {"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 计算 `torch.fmod(x, y)` 和 `x % y`", "torch", "ref"),
        Accepts("burn-port-runs", "burn 计算 `x.fmod(y)` 和 `x % y`，不报错", "burn", "port"),
        SignFollows("torch-fmod-dividend-sign", "PyTorch 的 `fmod` 非零时符号跟被除数 x", "torch-ref", "fmod", "x"),
        SignFollows("torch-remainder-divisor-sign", "PyTorch 的 `%` 非零时符号跟除数 y", "torch-ref", "remainder", "y"),
        SignFollows("burn-percent-divisor-sign", "burn 张量的 `%` 非零时符号跟除数 y：它是 `remainder`，不是 Rust 对 f32 的 `%`",
                    "burn-percent", "fmod", "y"),
        TensorsCompare("remainder-matches", "burn 的 `x % y` 和 PyTorch 的 `x % y` 一致", "torch-ref", "burn-port", ("remainder",)),
        FmodComputedAs("torch-fmod-exact", "PyTorch 的 `fmod` 逐位等于 C 的 fmod（精确结果）", "torch-ref", "fmod", "exact"),
        FmodComputedAs("burn-fmod-composed", "burn 0.22.1 的 `fmod` 逐位等于 f32 里算的 `x - y * trunc(x / y)`", "burn-port", "fmod", "composed"),
        Mismatches("negative-control", "burn 的 `x.fmod(y)` 对 PyTorch 的 `torch.fmod(x, y)` 报 MISMATCH", "torch-ref", "burn-port"),
        OnlyTensorsDiffer("only-fmod-differs", "只有 fmod 不同，remainder 和输入都一致", "torch-ref", "burn-port", ("fmod",)),
        OffByDivisor("off-by-divisor", "有的元素差出整整一个 |y|，不是舍入误差", "torch-ref", "burn-port", "fmod"),
        Mismatches("percent-mismatches", "把 `torch.fmod` 写成 burn 的 `x % y`，对 PyTorch 报 MISMATCH", "torch-ref", "burn-percent"),
        Matches("fix-matches", "`x.abs().remainder(y.abs()) * x.sign()` 和 `torch.fmod` 一致", "torch-ref", "burn-fixed"),
        FmodComputedAs("fixed-exact", "改法逐位等于 C 的 fmod", "burn-fixed", "fmod", "exact"),
        SignFollows("fixed-dividend-sign", "改法的 fmod 非零时符号跟被除数 x", "burn-fixed", "fmod", "x"),
    ),
)
