"""p28: burn's MultiHeadAttention defaults to dropout 0.1 (PyTorch's MultiheadAttention to 0.0);
in training the attention weights are dropped. Both sides apply it after the softmax."""

from dataclasses import dataclass

import numpy as np

from pita.likely import Signature
from pita_lab.experiment import Accepts, DefaultsDiffer, Experiment, Matches, Mismatches, PairClaim, SourceRef


@dataclass(frozen=True)
class DroppedAfterSoftmax(PairClaim):
    """Every element of `tensor` in `candidate` is 0 or the undropped `reference` value ×1/(1-p),
    p read from the candidate's metadata under `key`, and at least one is 0. For attention
    weights this means dropout acted on the softmax output, not on the scores before it."""

    tensor: str
    key: str
    rtol: float = 1e-5

    def observe(self, record, out):
        ref, cand = self.dumps(out)
        r = ref.tensors[self.tensor].astype(np.float64).ravel()
        c = cand.tensors[self.tensor].astype(np.float64).ravel()
        p = float(cand.metadata[self.key])
        scale = 1.0 / (1.0 - p)
        zeroed = c == 0
        ratios = c[~zeroed] / r[~zeroed]
        ok = bool(zeroed.any()) and bool(np.all(np.abs(ratios - scale) <= self.rtol * scale))
        low, high = (float(ratios.min()), float(ratios.max())) if ratios.size else (float("nan"),) * 2
        return (f"{self.tensor}: some zeros, the rest ×1/(1-{p:g})={scale:.9g} ±{self.rtol:g}",
                f"{int(zeroed.sum())} of {c.size} zeroed, the rest ×[{low:.9g}, {high:.9g}]", ok)


def magnitude(record) -> str:
    port = record.program("burn", "port")
    weights = port.tensors["weights"]
    rows = {t.name: t for t in record.comparison("torch-ref", "burn-port").tensors}
    zeroed = sum(1 for v in weights if v == 0)
    return (f"默认 dropout {float(port.metadata['dropout']):g}：{len(weights)} 个注意力权重 {zeroed} 个置零，"
            f"输出差 {rows['context'].max_abs_diff:.2g}")


EXPERIMENT = Experiment(
    id="p28",
    title="MultiHeadAttention 默认 dropout 0.1（PyTorch 是 0），训练时注意力权重被丢",
    fix="`.with_dropout(…)`，取 PyTorch 模块的 `dropout`（`nn.MultiheadAttention` 默认 0.0）",
    mainline="train/eval",
    kind="silent",
    symptoms=("eval-wrong", "forward-wrong"),
    related=("p09", "p10f", "p25"),
    signature=Signature("setting", settings=("MultiheadAttention.dropout",)),
    torch_variants=("ref", "drop"),
    burn_variants=("fixed", "drop", "port"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/modules/attention/mha.rs", "MultiHeadAttentionConfig::init", "DropoutConfig::new(self.dropout).init()"),
        SourceRef("burn-nn", "src/modules/attention/mha.rs", "MultiHeadAttention::attn_weights", "self.dropout.forward(weights)"),
    ),
    magnitude=magnitude,
    claims=(
        DefaultsDiffer("defaults-differ", "注意力 dropout 的默认值：PyTorch 和 burn 记录的值不同",
                       "torch-ref", "burn-port", "dropout", "多头注意力的 `dropout`（`MultiHeadAttentionConfig` / `nn.MultiheadAttention`）",
                       maps=("MultiheadAttention.dropout", "MultiHeadAttention.dropout")),
        Accepts("burn-port-runs", "burn 用默认配置跑注意力，不报错", "burn", "port"),
        DroppedAfterSoftmax("port-drops-weights", "burn-port：注意力权重是 0 或 softmax ×1/(1-p)",
                            "torch-ref", "burn-port", "weights", "dropout"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "burn-fixed（`.with_dropout(0.0)`）和 torch-ref 一致", "torch-ref", "burn-fixed"),
        DroppedAfterSoftmax("torch-drops-after-softmax", "`dropout=0.5` 的 PyTorch 丢弃 softmax 权重（各行之和不再是 1）",
                            "torch-ref", "torch-drop", "weights", "dropout"),
        DroppedAfterSoftmax("burn-drops-after-softmax", "dropout 0.5 的 burn 也丢弃 softmax 权重：位置和 PyTorch 相同",
                            "torch-ref", "burn-drop", "weights", "dropout"),
    ),
)
