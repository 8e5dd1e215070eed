"""p11a: KLDivLoss's default reduction: PyTorch 'mean' (every element), burn `Reduction::Auto` (batchmean)."""

from pita.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, ScaledByMetadata, SourceRef


def magnitude(record) -> str:
    scale = next(d for t in record.comparison("torch-mean", "burn-auto").result["tensors"] for d in t["diagnosis"] if d["kind"] == "scale")
    classes = record.program("torch", "mean").metadata["num_classes"]
    return f"loss 与梯度 ×{scale['factor']:.6g}（类别数 {classes}）"


EXPERIMENT = Experiment(
    id="p11a",
    title="KLDivLoss 的 Reduction::Auto 是 batchmean，PyTorch 默认按元素平均",
    mainline="loss",
    kind="silent",
    torch_script="experiments/pytorch/p11a_kldiv.py",
    burn_binary="p11a",
    torch_variants=("mean", "batchmean"),
    burn_variants=("auto", "mean"),
    comparisons=(("torch-mean", "burn-mean"), ("torch-mean", "burn-auto"), ("torch-batchmean", "burn-auto")),
    compile_fail=(),
    sources=(
        SourceRef("burn-nn", "src/loss/kldiv.rs", "KLDivLoss::forward", "Reduction::BatchMean | Reduction::Auto"),
        SourceRef("burn-nn", "src/loss/mse.rs", "MseLoss::forward", "Reduction::Mean | Reduction::Auto"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-mean-runs", "PyTorch's KLDivLoss() runs with its default reduction", "torch", "mean"),
        Accepts("burn-auto-runs", "burn's KLDivLoss runs with Reduction::Auto", "burn", "auto"),
        ScaledByMetadata("auto-is-classes-times-mean", "burn-auto = num_classes × torch-mean, element by element",
                         "torch-mean", "burn-auto", "num_classes"),
        Diagnosed("compare-names-the-factor", "compare diagnoses a scale equal to the number of classes",
                  "torch-mean", "burn-auto", "scale", "num_classes"),
        Mismatches("negative-control", "burn-auto against torch-mean is a MISMATCH", "torch-mean", "burn-auto"),
        Matches("auto-is-batchmean", "burn-auto matches PyTorch's reduction='batchmean'", "torch-batchmean", "burn-auto"),
        Matches("fix-matches", "burn-mean (Reduction::Mean) matches torch-mean at atol 1e-6", "torch-mean", "burn-mean"),
    ),
)
