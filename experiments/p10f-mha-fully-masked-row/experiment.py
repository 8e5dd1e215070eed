"""p10f: burn's MultiHeadAttention masks with a finite min_float (-1e4): a fully padded sequence
gets a uniform average of the values, where PyTorch gives NaN (need_weights=True) or zero
attention (need_weights=False)."""

from dataclasses import dataclass

import numpy as np

from pita_lab.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, PairClaim, Panics, SourceRef


@dataclass(frozen=True)
class MatchesWithNaN(PairClaim):
    """Every tensor of `candidate` has NaN exactly where `reference` has, and the other elements
    agree within `atol`. Measured from the dumps (compare never lets NaN pass by default)."""

    atol: float = 1e-6

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        same_nan, worst, nan_count = True, 0.0, 0
        for name, ref in reference.tensors.items():
            r = ref.astype(np.float64).ravel()
            c = candidate.tensors[name].astype(np.float64).ravel()
            r_nan, c_nan = np.isnan(r), np.isnan(c)
            same_nan &= bool(np.array_equal(r_nan, c_nan))
            nan_count += int(r_nan.sum())
            both = ~r_nan & ~c_nan
            if both.any():
                worst = max(worst, float(np.max(np.abs(r[both] - c[both]))))
        expected = f"NaN at the same positions, other elements within atol {self.atol:g}"
        observed = f"{nan_count} NaN in {self.reference}, {'same' if same_nan else 'DIFFERENT'} positions; max|diff| elsewhere {worst:.2e}"
        return expected, observed, same_nan and worst <= self.atol


def magnitude(record) -> str:
    worst = record.comparison("torch-noweights", "burn-port").result.worst
    nans = sum(1 for v in record.program("torch", "weights").tensors["out"] if v != v)
    return f"空序列输出差 {worst:.3g}（PyTorch 另一路径 {nans} 个 NaN）"


EXPERIMENT = Experiment(
    id="p10f",
    title="全被遮住的序列：burn 的 MHA 给出均匀平均，PyTorch 给 NaN 或零注意力",
    mainline="forward",
    kind="silent",
    symptoms=("nan", "forward-wrong"),
    related=("p10c", "p10e", "p28"),
    torch_variants=("weights", "noweights"),
    burn_variants=("port", "neginf", "fixed", "guard"),
    comparisons=(
        ("torch-noweights", "burn-fixed"),
        ("torch-noweights", "burn-port"),
        ("torch-weights", "burn-port"),
    ),
    sources=(
        SourceRef("burn-nn", "src/modules/attention/mha.rs", "attn_weights", "attn_scores = attn_scores.mask_fill("),
        SourceRef("burn-nn", "src/modules/attention/mha.rs", "attn_weights", "self.min_float,"),
        SourceRef("burn-nn", "src/modules/attention/mha.rs", "attn_weights", " softmax(attn_scores, 3)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-weights-runs", "PyTorch 的 MHA（`need_weights=True`）在这批数据上正常运行", "torch", "weights"),
        Accepts("torch-noweights-runs", "PyTorch 的 MHA（`need_weights=False`）在这批数据上正常运行", "torch", "noweights"),
        Accepts("burn-runs", "burn 的 MHA 在这批数据上正常运行，不报错", "burn", "port"),
        Mismatches("port-vs-noweights", "burn 的输出对 PyTorch `need_weights=False` 的输出报 MISMATCH",
                   "torch-noweights", "burn-port"),
        Mismatches("port-vs-weights", "burn 的输出对 PyTorch `need_weights=True` 的输出报 MISMATCH",
                   "torch-weights", "burn-port"),
        Diagnosed("weights-nan", "compare 在 PyTorch `need_weights=True` 的输出里发现 NaN，burn 在这些位置给出数值",
                  "torch-weights", "burn-port", "nan", params=(("side", "reference"),)),
        MatchesWithNaN("neginf-like-weights", "`min_float = -inf` 的 burn 恰好在 PyTorch `need_weights=True` 出 NaN 的位置出 NaN",
                       "torch-weights", "burn-neginf"),
        Matches("fixed-matches", "burn 把空序列设为零注意力后，在 atol 1e-6 下和 `need_weights=False` 一致",
                "torch-noweights", "burn-fixed"),
        Panics("guard-rejects-empty", "`assert_no_empty_sequence` 在注意力之前拦下整条都是 padding 的序列",
               "burn", "guard", "every key is padding"),
    ),
)
