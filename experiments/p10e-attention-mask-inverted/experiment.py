"""p10e: a boolean attention mask ported from PyTorch's SDPA (True = attend) to burn's attention
(true = masked out): every query attends to exactly the keys it should not."""

from pita_lab.experiment import Accepts, CompileFails, Experiment, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    worst = record.comparison("torch-sdpa", "burn-port").result.worst
    return f"输出差 {worst:.2g}"


EXPERIMENT = Experiment(
    id="p10e",
    title="注意力的布尔掩码：PyTorch SDPA 的 True 是参与，burn 的 true 是屏蔽",
    mainline="forward",
    kind="silent",
    symptoms=("forward-wrong",),
    related=("p05", "p10f"),
    torch_variants=("sdpa",),
    burn_variants=("port", "not", "typed"),
    comparisons=(("torch-sdpa", "burn-not"), ("torch-sdpa", "burn-typed"), ("torch-sdpa", "burn-port")),
    sources=(
        SourceRef("burn-backend", "src/backend/ops/modules/attention.rs", "attention_fallback",
                  "B::float_mask_fill(attention_scores, mask, f32::NEG_INFINITY.into())"),
        SourceRef("burn-autodiff", "src/ops/module.rs", "attention", "attention_fallback::<Self>("),
        SourceRef("burn-nn", "src/modules/attention/mha.rs", "attn_weights", "attn_scores = attn_scores.mask_fill("),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 SDPA 用布尔掩码正常运行", "torch", "sdpa"),
        Accepts("burn-accepts-mask", "burn 的 attention 接受同一个掩码，不报错", "burn", "port"),
        Mismatches("port-mismatches", "同一个掩码在 burn 里对 PyTorch 报 MISMATCH", "torch-sdpa", "burn-port"),
        Matches("not-matches", "burn 里用 `mask.bool_not()`，在 atol 1e-6 下和 PyTorch 一致", "torch-sdpa", "burn-not"),
        Matches("typed-matches", "pita 的 `sdpa` 配 `AttendMask`，在 atol 1e-6 下和 PyTorch 一致", "torch-sdpa", "burn-typed"),
        CompileFails("ce10e-rejects-bare-mask", "`sdpa` 在编译期拒绝裸的 `Tensor<4, Bool>`",
                     "ce10e", "E0308", "expected `AttendMask`, found `Tensor<4, Bool>`"),
    ),
)
