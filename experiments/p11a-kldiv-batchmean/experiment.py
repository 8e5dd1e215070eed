"""p11a: KLDivLoss's default reduction: PyTorch 'mean' (every element), burn `Reduction::Auto` (batchmean)."""

from pita.likely import Signature
from pita_lab.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, ScaledByMetadata, SourceRef


def magnitude(record) -> str:
    scale = next(d for t in record.comparison("torch-mean", "burn-auto").tensors for d in t.diagnosis if d.kind == "scale")
    classes = record.program("torch", "mean").metadata["num_classes"]
    return f"loss 与梯度 ×{scale.params['factor']:.6g}（类别数 {classes}）"


EXPERIMENT = Experiment(
    id="p11a",
    title="KLDivLoss 的 Reduction::Auto 是 batchmean，PyTorch 默认按元素平均",
    mainline="loss",
    kind="silent",
    symptoms=("grad-scaled", "loss-wrong"),
    related=("p11", "p11c", "p12"),
    signature=Signature("diagnosis", diagnosis="scale", factor="count", phase="loss"),
    also=("p18a",),
    fix="`KLDivLossConfig` 用 `Reduction::Mean`（PyTorch `nn.KLDivLoss()` 默认按元素平均；`batchmean` 才对应 `Auto`）",
    torch_variants=("mean", "batchmean"),
    burn_variants=("auto", "mean"),
    comparisons=(("torch-mean", "burn-mean"), ("torch-mean", "burn-auto"), ("torch-batchmean", "burn-auto")),
    sources=(
        SourceRef("burn-nn", "src/loss/kldiv.rs", "KLDivLoss::forward", "Reduction::BatchMean | Reduction::Auto"),
        SourceRef("burn-nn", "src/loss/mse.rs", "MseLoss::forward", "Reduction::Mean | Reduction::Auto"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-mean-runs", "PyTorch 的 `KLDivLoss()` 用默认的归约方式正常运行", "torch", "mean"),
        Accepts("burn-auto-runs", "burn 的 `KLDivLoss` 用 `Reduction::Auto` 正常运行", "burn", "auto"),
        ScaledByMetadata("auto-is-classes-times-mean", "burn-auto = num_classes × torch-mean，逐元素成立",
                         "torch-mean", "burn-auto", "num_classes"),
        Diagnosed("compare-names-the-factor", "compare 诊断出 scale，倍数等于类别数",
                  "torch-mean", "burn-auto", "scale", "num_classes"),
        Mismatches("negative-control", "burn-auto 对 torch-mean 报 MISMATCH", "torch-mean", "burn-auto"),
        Matches("auto-is-batchmean", "burn-auto 和 PyTorch 的 `reduction='batchmean'` 一致", "torch-batchmean", "burn-auto"),
        Matches("fix-matches", "burn-mean（`Reduction::Mean`）在 atol 1e-6 下和 torch-mean 一致", "torch-mean", "burn-mean"),
    ),
)
