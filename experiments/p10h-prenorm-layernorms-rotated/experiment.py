"""p10h: pre-norm Transformer layers (`norm_first=True`) loaded from PyTorch into burn name for
name. burn's encoder layer runs `norm_2` before the attention and `norm_1` before the
feed-forward, PyTorch `norm1` and `norm2`; the decoder layer is rotated the same way, and burn's
encoder has no final norm. The load reports nothing; the output is wrong."""

import json
from dataclasses import dataclass

from pita_lab.experiment import Accepts, Claim, Experiment, Loaded, Mapped, Matches, Mismatches, SourceRef, Traced


def _names(value: str) -> list[str]:
    return [n for n in value.split(",") if n]


@dataclass(frozen=True)
class UnusedOnly(Claim):
    """A burn variant's load report (its dump's comma-separated `applied`, `missing`, `unused`
    metadata): parameters applied, none missing, and the file's unused tensors exactly those
    whose names start with `prefix`, at least one."""

    id: str
    text: str
    variant: str
    prefix: str

    def observe(self, record, out):
        meta = record.program("burn", self.variant).metadata
        applied, missing, unused = (_names(meta.get(key, "")) for key in ("applied", "missing", "unused"))
        observed = f"applied {len(applied)}, missing {len(missing)}, unused {unused or 'none'}"
        ok = bool(applied) and not missing and bool(unused) and all(name.startswith(self.prefix) for name in unused)
        return f"applied > 0, missing 0, unused: {self.prefix}* only", observed, ok


@dataclass(frozen=True)
class RunsFirst(Claim):
    """The first module call a recording's `execution_order` metadata lists is `act`."""

    id: str
    text: str
    side: str
    variant: str
    act: str

    def observe(self, record, out):
        order = json.loads(record.program(self.side, self.variant).metadata.get("execution_order", "[]"))
        first = order[0] if order else "nothing recorded"
        return self.act, first, first == self.act


def magnitude(record) -> str:
    worst = record.comparison("torch-ref", "burn-port").result.worst
    return f"名字对名字加载不报错，输出差 {worst:.2g}"


EXPERIMENT = Experiment(
    id="p10h",
    title="pre-norm Transformer 的 LayerNorm 在 burn 里换了位置：按名字加载不报错，输出全错",
    mainline="forward",
    kind="silent",
    symptoms=("wrong-after-load", "forward-wrong"),
    related=("p09", "p31"),
    reports=("tracel-ai/models#30",),
    settings=(Mapped("TransformerEncoderLayer.norm_first", "TransformerEncoderLayer.norm_first", False, False),),
    torch_variants=("ref", "equal", "post", "stack", "decoder", "record"),
    burn_variants=("port", "fixed", "equal-port", "post-port", "stack-port", "stack-fixed", "decoder-port",
                   "decoder-fixed", "record-port", "record-fixed"),
    comparisons=(
        ("torch-ref", "burn-port"),
        ("torch-ref", "burn-fixed"),
        ("torch-equal", "burn-equal-port"),
        ("torch-post", "burn-post-port"),
        ("torch-stack", "burn-stack-port"),
        ("torch-stack", "burn-stack-fixed"),
        ("torch-decoder", "burn-decoder-port"),
        ("torch-decoder", "burn-decoder-fixed"),
    ),
    traces=(("torch-record", "burn-record-port"), ("torch-record", "burn-record-fixed")),
    sources=(
        SourceRef("burn-nn", "src/modules/transformer/encoder.rs", "TransformerEncoderLayer::forward",
                  "residual_path = self.norm_2.forward(residual_path)"),
        SourceRef("burn-nn", "src/modules/transformer/encoder.rs", "TransformerEncoderLayer::forward",
                  "self.norm_1.forward(x.clone())"),
        SourceRef("burn-nn", "src/modules/transformer/encoder.rs", "TransformerEncoderLayer::forward",
                  "x = self.norm_1.forward(x);"),
        SourceRef("burn-nn", "src/modules/transformer/encoder.rs", "TransformerEncoderLayer::forward",
                  "x = self.norm_2.forward(x)"),
        SourceRef("burn-nn", "src/modules/transformer/encoder.rs", "TransformerEncoderLayer",
                  "/// Layer normalization applied around the feed-forward sub-layer."),
        SourceRef("burn-nn", "src/modules/transformer/encoder.rs", "TransformerEncoder::forward",
                  "x = layer.forward(x, input.mask_pad.clone(), input.mask_attn.clone());"),
        SourceRef("burn-nn", "src/modules/transformer/decoder.rs", "TransformerDecoderLayer::forward",
                  "residual_path = self.norm_3.forward(residual_path);"),
        SourceRef("burn-nn", "src/modules/transformer/decoder.rs", "TransformerDecoderLayer::forward",
                  "self.norm_1.forward(x.clone())"),
        SourceRef("burn-nn", "src/modules/transformer/decoder.rs", "TransformerDecoderLayer::forward",
                  "self.norm_2.forward(x.clone())"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 pre-norm 编码器（两个 LayerNorm 权重不同）运行并保存 state_dict", "torch", "ref"),
        Loaded("port-loads-cleanly", "名字对名字（`norm1`→`norm_1`，`norm2`→`norm_2`）加载：每个张量都用上，没有缺的，没有多的",
               "port"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "两个 norm 对调着加载（`norm1`→`norm_2`，`norm2`→`norm_1`）后，burn-fixed 和 torch-ref 一致",
                "torch-ref", "burn-fixed"),
        Matches("equal-norms-hide", "两个 LayerNorm 都是初始值（γ = 1，β = 0）时，名字对名字加载也一致：坑藏住了",
                "torch-equal", "burn-equal-port"),
        Matches("post-norm-name-for-name", "post-norm（`norm_first=False`）时名字对名字加载就是对的", "torch-post", "burn-post-port"),
        RunsFirst("torch-norm1-first", "PyTorch 的记录里，层内第一个运行的模块是 `norm1`（在 attention 之前）",
                  "torch", "record", "act/layers.0.norm1"),
        Accepts("tapped-copy-is-burn", "照 burn 源码抄出的带 tap 的前向，输出和 burn 自己的 `TransformerEncoder::forward` 逐元素相同"
                "（程序里断言）", "burn", "record-port"),
        RunsFirst("burn-norm2-first", "burn 里第一个运行的是从 PyTorch `norm2` 加载来的 `norm_2`", "burn", "record-port",
                  "act/layers.0.norm2"),
        Traced("trace-finds-norm1", "`pita trace`：参数全部一致，第一处分歧在 `act/layers.0.norm1`，也就是 attention 的输入",
               "torch-record", "burn-record-port", phase="forward", name="act/layers.0.norm1"),
        Traced("trace-fixed-clean", "对调后再 trace，参数和每个模块的输出都一致", "torch-record", "burn-record-fixed"),
        UnusedOnly("final-norm-unused", "两层加最终 norm 的编码器：最终 norm 的张量在 burn 里没有去处，只出现在 `unused` 里",
                   "stack-port", "norm."),
        Mismatches("final-norm-missing", "层内 norm 对调了但没有最终 norm：burn-stack-port 对 torch-stack 报 MISMATCH",
                   "torch-stack", "burn-stack-port"),
        Matches("final-norm-fix", "在 burn 的编码器后面接一个 LayerNorm 并加载 `norm.*`：burn-stack-fixed 和 torch-stack 一致",
                "torch-stack", "burn-stack-fixed"),
        Mismatches("decoder-negative-control", "pre-norm 解码器名字对名字加载：burn-decoder-port 对 torch-decoder 报 MISMATCH",
                   "torch-decoder", "burn-decoder-port"),
        Matches("decoder-fix-matches", "解码器按 `norm1`→`norm_3`、`norm2`→`norm_1`、`norm3`→`norm_2` 加载后一致",
                "torch-decoder", "burn-decoder-fixed"),
    ),
)
