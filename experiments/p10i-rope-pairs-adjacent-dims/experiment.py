"""p10i: burn's RotaryEncoding rotates dimension pairs (2i, 2i+1); HF transformers' rotate_half
(LLaMA, Qwen, Mistral) rotates (i, i + head_dim/2). q/k projections loaded as they are give other
attention scores; reordering their outputs makes burn's pairs HF's."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import (
    Accepts,
    Experiment,
    Matches,
    Mismatches,
    PairClaim,
    SameHparam,
    SideClaim,
    SourceRef,
)

# Which dimension a rule rotates dimension j of a head of `d` dimensions with.
PARTNERS = {
    "half": lambda j, d: (j + d // 2) % d,  # rotate_half: (i, i + d/2)
    "adjacent": lambda j, d: j ^ 1,  # burn: (2i, 2i+1)
}


@dataclass(frozen=True)
class RotatesPairs(SideClaim):
    """In the side's `unit.rotated` ([position, j, :] = unit vector e_j of one head rotated at
    that position), the rotation at position 1 moves each e_j into exactly one other dimension,
    the partner `rule` names (`half` or `adjacent`), for the head size the dump records."""

    rule: str

    def observe(self, record, out):
        dump = read_dump(out / f"{self.side}-{self.variant}.safetensors")
        rotated = dump.tensors["unit.rotated"][1]
        head_dim = int(dump.metadata["head_dim"])
        found = [sorted(int(c) for c in np.flatnonzero(row) if c != j) for j, row in enumerate(rotated)]
        wanted = [[PARTNERS[self.rule](j, head_dim)] for j in range(head_dim)]
        shown = ", ".join(f"{j}-{p[0] if len(p) == 1 else p}" for j, p in enumerate(found))
        expected = ", ".join(f"{j}-{p[0]}" for j, p in enumerate(wanted))
        return f"partners {expected}", f"partners {shown}", found == wanted


@dataclass(frozen=True)
class DiffersOffDiagonal(PairClaim):
    """In `pita compare`, `tensor` ([..., query position, key position] scores) passes the
    tolerance exactly where the query and key positions are equal."""

    tensor: str

    def observe(self, record, out):
        run = record.comparison(self.reference, self.candidate)
        row = next(t for t in run.tensors if t.name == self.tensor)
        reference, candidate = self.dumps(out)
        ref, cand = reference.tensors[self.tensor].astype(np.float64), candidate.tensors[self.tensor].astype(np.float64)
        tolerance = run.result.tolerance
        passes = np.abs(cand - ref) <= tolerance.atol + tolerance.rtol * np.abs(ref)
        same_position = np.broadcast_to(np.eye(ref.shape[-1], dtype=bool), ref.shape)
        observed = (f"{int(passes[same_position].sum())} of {int(same_position.sum())} same-position scores pass, "
                    f"{int((~passes[~same_position]).sum())} of {int((~same_position).sum())} others fail "
                    f"(max|diff| {row.max_abs_diff:.2e})")
        return "same position: pass; every other: fail", observed, bool(np.array_equal(passes, same_position))


@dataclass(frozen=True)
class PermutedAsProjection(PairClaim):
    """compare diagnoses each of `tensors` (one row per projection output) as a permutation of
    rows, and the rows are the order the burn dump records under `projection_order`: the
    reordered projection's outputs, rotated."""

    tensors: tuple[str, ...]

    def observe(self, record, out):
        order = [int(i) for i in record.program(*self.candidate.split("-", 1)).metadata["projection_order"].split(",")]
        rows = {t.name: t for t in record.comparison(self.reference, self.candidate).tensors}
        found, ok = [], True
        for name in self.tensors:
            diagnosed = [d for d in rows[name].diagnosis if d.kind == "permutation" and "rows" in d.params]
            found.append(f"{name}: rows {diagnosed[0].params['rows']}" if diagnosed else f"{name}: no row permutation")
            ok = ok and bool(diagnosed) and diagnosed[0].params["rows"] == order
        return f"permutation rows {order} on {', '.join(self.tensors)}", "; ".join(found), ok


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-ref", "burn-port").tensors if t.name == "scores")
    return f"注意力分数差到 {row.max_abs_diff:.2g}（对角线上一致）"


EXPERIMENT = Experiment(
    id="p10i",
    title="RoPE 的配对不同：burn 转 (2i, 2i+1)，HF 的 rotate_half 转 (i, i+d/2)",
    mainline="forward",
    kind="silent",
    symptoms=("forward-wrong", "wrong-after-load"),
    related=("p07", "p10e", "p31"),
    torch_variants=("ref", "pairs", "rotated"),
    burn_variants=("port", "fixed", "pairs", "rotated"),
    comparisons=(("torch-pairs", "burn-pairs"), ("torch-ref", "burn-port"), ("torch-ref", "burn-fixed"),
                 ("torch-rotated", "burn-rotated")),
    sources=(
        SourceRef("burn-nn", "src/modules/rope_encoding.rs", "RotaryEncoding::apply", ".reshape([dummy_dim_size, seq_len, d_model / 2, 2])"),
        SourceRef("burn-nn", "src/modules/rope_encoding.rs", "RotaryEncoding::apply",
                  "Tensor::<2>::from_floats([[1.0, 0.0, 0.0, 1.0], [0.0, -1.0, 1.0, 0.0]], &device);"),
        SourceRef("burn-nn", "src/modules/rope_encoding.rs", "RotaryEncoding::compute_rotary_frequencies", ".repeat_dim(2, 2)"),
        SourceRef("burn-nn", "src/modules/rope_encoding.rs", "RotaryEncodingConfig::initialize",
                  "let theta = exponent.mul_scalar(self.theta.ln()).exp().recip();"),
        SourceRef("burn-nn", "src/modules/rope_encoding.rs", "RotaryEncodingConfig", '#[config(default = "10000.0")]'),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 按 transformers 的写法（`rotate_half`）算注意力", "torch", "ref"),
        Accepts("burn-port-runs", "burn 照搬 q/k/v 投影、用 `RotaryEncoding`，不报错", "burn", "port"),
        SameHparam("same-theta", "两边的 RoPE 底数 theta 相同（burn 用 `RotaryEncodingConfig` 的默认值）",
                   "torch-ref", "burn-port", "rope_theta"),
        RotatesPairs("torch-pairs-half", "单位向量在位置 1 上：PyTorch 的 `rotate_half` 把第 i 维和第 i + d/2 维配成一对",
                     "torch", "pairs", "half"),
        RotatesPairs("burn-pairs-adjacent", "单位向量在位置 1 上：burn 的 `RotaryEncoding` 把第 2i 维和第 2i+1 维配成一对",
                     "burn", "pairs", "adjacent"),
        Mismatches("pairs-differ", "两边转出的单位向量报 MISMATCH", "torch-pairs", "burn-pairs"),
        Mismatches("negative-control", "照搬投影的 burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        DiffersOffDiagonal("same-position-agrees", "照搬时只有同一位置的 q·k（对角线）一致，其余分数都不同",
                           "torch-ref", "burn-port", "scores"),
        Matches("fix-matches", "q/k 投影的输出按 [0, d/2, 1, d/2+1, …] 重排后，burn-fixed 和 torch-ref 一致",
                "torch-ref", "burn-fixed"),
        PermutedAsProjection("rotated-rows-permuted", "重排后旋转过的 q、k 是 PyTorch 的 q、k 换了行序，行序就是投影的重排顺序",
                             "torch-rotated", "burn-rotated", ("q.rot", "k.rot")),
    ),
)
