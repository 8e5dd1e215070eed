"""p09: burn's PositionWiseFeedForward / Transformer configs default to GELU; PyTorch's TransformerEncoderLayer to ReLU."""

from pita.likely import Signature
from pita_lab.experiment import Accepts, DefaultsDiffer, Experiment, Matches, Mismatches, SourceRef


def magnitude(record) -> str:
    rows = record.comparison("torch-ref", "burn-port").tensors
    out = next(t for t in rows if t.name == "out")
    return f"输出差 {out.max_abs_diff:.2g}"


EXPERIMENT = Experiment(
    id="p09",
    title="Transformer 前馈层默认 GELU，PyTorch 默认 ReLU",
    fix="`.with_activation(ActivationConfig::Relu)`（PyTorch 的 Transformer 层默认 ReLU）",
    mainline="forward",
    kind="silent",
    symptoms=("forward-wrong",),
    related=("p17", "p28"),
    signature=Signature("setting", settings=("TransformerEncoderLayer.activation",)),
    torch_variants=("ref",),
    burn_variants=("port", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/modules/transformer/pwff.rs", "PositionWiseFeedForwardConfig::init", "activation: self.activation.init(device),"),
        SourceRef("burn-nn", "src/modules/transformer/pwff.rs", "PositionWiseFeedForward::forward", "let x = self.activation.forward(x);"),
        SourceRef("burn-nn", "src/modules/transformer/encoder.rs", "TransformerEncoderLayer::new", ".with_activation(config.activation.clone())"),
        SourceRef("burn-nn", "src/modules/transformer/decoder.rs", "TransformerDecoderLayer::new", ".with_activation(config.activation.clone())"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 编码器层的前馈块正常运行（激活函数为 relu）", "torch", "ref"),
        Accepts("burn-port-runs", "burn 默认配置的 `PositionWiseFeedForward` 正常运行", "burn", "port"),
        DefaultsDiffer("activation-differs", "两边默认的前馈层激活函数不同（各自从配置和层上读出）", "torch-ref", "burn-port",
                       "activation", "Transformer 前馈层的激活函数（`PositionWiseFeedForwardConfig` / `nn.TransformerEncoderLayer`）",
                       maps=("TransformerEncoderLayer.activation", "TransformerEncoderLayer.activation")),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH（`out` 不一致；`hidden` 一致）", "torch-ref", "burn-port"),
        Matches("fix-matches", "burn-fixed（`ActivationConfig::Relu`）在 atol 1e-6 下和 torch-ref 一致", "torch-ref", "burn-fixed"),
    ),
)
