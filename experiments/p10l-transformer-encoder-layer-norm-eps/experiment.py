"""p10l: burn's TransformerEncoderConfig builds every LayerNorm at epsilon 1e-5; a BERT checkpoint
(transformers' BertConfig: layer_norm_eps=1e-12) was trained with 1e-12. Both sides record (pita's
recorders), so compare sets the outputs against each other and trace the LayerNorms' settings."""

from dataclasses import dataclass

import numpy as np

from pita.likely import Signature
from pita_lab.experiment import Accepts, DefaultsDiffer, Experiment, Mapped, Matches, Mismatches, PairClaim, SourceRef, Traced

PORT_TEST_ATOL = 1e-4  # the tolerance of the public port's own test, which the difference passes
OUTPUT = "act/layer.1.output.LayerNorm"  # the encoder's output: its last LayerNorm's


@dataclass(frozen=True)
class WithinLooseTolerance(PairClaim):
    """Every element of `tensor` in `candidate` is within `atol` of `reference` (an allclose at a
    port test's tolerance), although compare's float32 budget refuses the pair."""

    tensor: str
    atol: float

    def observe(self, record, out):
        ref, cand = self.dumps(out)
        diff = float(np.max(np.abs(cand.tensors[self.tensor].astype(np.float64) - ref.tensors[self.tensor].astype(np.float64))))
        return f"max|diff| <= {self.atol:g}", f"max|diff| {diff:.3g}", diff <= self.atol


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-ref", "burn-port").tensors if t.name == OUTPUT)
    return f"输出差 {row.max_abs_diff:.2e}（atol {PORT_TEST_ATOL:g} 看不出）"


EXPERIMENT = Experiment(
    id="p10l",
    title="TransformerEncoderConfig 的 layer_norm_eps 默认 1e-5，BERT 是 1e-12",
    fix="`TransformerEncoderConfig::new(..).with_layer_norm_eps(…)`，取权重所属模型的 `layer_norm_eps`（BERT 为 1e-12）",
    mainline="forward",
    kind="silent",
    symptoms=("forward-wrong", "wrong-after-load"),
    related=("p10b", "p10h", "p09"),
    signature=(Signature("setting", settings=("LayerNorm.eps",)),
               Signature("diagnosis", diagnosis="slice_scale", factor="near_one", module_kind=("LayerNorm",)),
               Signature("diagnosis", diagnosis="scale", factor="near_one", module_kind=("LayerNorm",))),
    settings=(Mapped("LayerNorm.eps", "LayerNorm.epsilon", 1e-05, 1e-05),),
    torch_variants=("ref",),
    burn_variants=("port", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    traces=(("torch-ref", "burn-port"), ("torch-ref", "burn-fixed")),
    sources=(
        SourceRef("burn-nn", "src/modules/transformer/encoder.rs", "TransformerEncoderConfig", "#[config(default = 1e-5)]"),
        SourceRef("burn-nn", "src/modules/transformer/encoder.rs", "TransformerEncoderLayer", ".with_epsilon(config.layer_norm_eps)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "transformers 的 `BertEncoder`（`BertConfig` 的默认 `layer_norm_eps`）正常运行", "torch", "ref"),
        Accepts("burn-port-runs", "burn 的 `TransformerEncoderConfig::new(..)` 编码器加载同样的权重，正常运行", "burn", "port"),
        DefaultsDiffer("eps-differs", "两边的 LayerNorm epsilon 不同：`BertConfig().layer_norm_eps` 对 `TransformerEncoderConfig` 的默认值",
                       "torch-ref", "burn-port", "layer_norm_eps",
                       "BERT 的 LayerNorm epsilon（`TransformerEncoderConfig.layer_norm_eps` / transformers 的 `BertConfig.layer_norm_eps`）"),
        Mismatches("negative-control", "burn-port 对 torch-ref 在 pita 的 float32 容差（atol 1e-6）下报 MISMATCH", "torch-ref", "burn-port"),
        WithinLooseTolerance("port-test-passes", f"同一对输出在 atol {PORT_TEST_ATOL:g}（移植项目自己的测试容差）下全部通过：那种测试看不出这个坑",
                             "torch-ref", "burn-port", OUTPUT, PORT_TEST_ATOL),
        Traced("trace-names-eps", "trace 在比数值之前先报出每个 LayerNorm 的 eps 两边不同，第一处数值分歧在编码器的输出",
               "torch-ref", "burn-port", phase="forward", name=OUTPUT, settings=("eps",)),
        Matches("fix-matches", "burn-fixed（`.with_layer_norm_eps(1e-12)`）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
        Traced("trace-fixed-matches", "trace：改后设置和数值都一致", "torch-ref", "burn-fixed"),
    ),
)
