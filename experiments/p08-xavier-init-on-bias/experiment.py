"""p08: an Initializer set on LinearConfig also draws the bias; PyTorch's xavier_uniform_ touches the weight only."""

from dataclasses import dataclass

from pita.dump import read_dump
from pita_lab.experiment import Accepts, Claim, Experiment, Matches, Mismatches, SourceRef


@dataclass(frozen=True)
class StatWithin(Claim):
    """A statistic stored in a dump's metadata lies in `(low, high]`, where both bounds are other
    metadata keys of the same dump (computed by the program, e.g. 1/√fan_in); `low` is optional."""

    id: str
    text: str
    dump: str
    stat: str
    high: str
    low: str | None = None

    def observe(self, record, out):
        meta = read_dump(out / f"{self.dump}.safetensors").metadata
        value, high = float(meta[self.stat]), float(meta[self.high])
        low = float(meta[self.low]) if self.low else None
        expected = (f"{self.low} < " if self.low else "") + f"{self.stat} <= {self.high}"
        observed = (f"{low:.6g} < " if self.low else "") + f"{value:.6g} <= {high:.6g}"
        ok = value <= high and (low is None or value > low)
        return expected, observed if ok else f"NOT {observed}", ok


def magnitude(record) -> str:
    torch, port = record.program("torch", "ref").metadata, record.program("burn", "port").metadata
    return f"偏置范围 ×{float(port['bias_max_abs']) / float(torch['bias_max_abs']):.2f}"


EXPERIMENT = Experiment(
    id="p08",
    title="配置的 Xavier 初始化也用在偏置上，偏置范围变大",
    fix="只重抽权重：`fc.weight = Initializer::XavierUniform { gain: 1.0 }.init_with(..)`，bias 保持 `LinearConfig` 的默认",
    mainline="init and weight layout",
    kind="silent",
    symptoms=("init-differs",),
    related=("p10g", "p29"),
    torch_variants=("ref",),
    burn_variants=("port", "fixed"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/modules/linear.rs", "LinearConfig::init", "let bias = if self.bias {"),
        SourceRef("burn-nn", "src/modules/linear.rs", "LinearConfig::init", "Some(self.initializer.init_with("),
        SourceRef("burn-nn", "src/initializer.rs", "Initializer::init_tensor", "self.xavier_std(fan_in, fan_out)"),
        SourceRef("burn-nn", "src/initializer.rs", "Initializer::init_tensor", "self.kaiming_std(*fan_out_only, fan_in, fan_out)"),
    ),
    magnitude=magnitude,
    claims=(
        StatWithin("torch-bias-default", "PyTorch：max|bias| 在默认边界 1/√fan_in 以内",
                   "torch-ref", "bias_max_abs", "default_bound"),
        StatWithin("port-bias-xavier", "burn-port：max|bias| 超出 1/√fan_in，但在 Xavier 边界 √(6/(fan_in+fan_out)) 以内",
                   "burn-port", "bias_max_abs", "xavier_bound", low="default_bound"),
        StatWithin("port-weight-xavier", "burn-port：max|weight| 在 Xavier 边界以内，和 PyTorch 一样",
                   "burn-port", "weight_max_abs", "xavier_bound"),
        Accepts("burn-port-runs", "burn-port 正常运行，并 dump 它的统计量", "burn", "port"),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH（超出 1/√fan_in 的偏置所占比例）",
                   "torch-ref", "burn-port"),
        StatWithin("fixed-bias-default", "burn-fixed：max|bias| 在 1/√fan_in 以内",
                   "burn-fixed", "bias_max_abs", "default_bound"),
        Matches("fix-matches", "burn-fixed 和 torch-ref 一致：没有偏置超出 1/√fan_in，没有权重超出 Xavier 边界",
                "torch-ref", "burn-fixed"),
    ),
)
