"""p12: the loss is not reduced before backward, so burn's gradients are batch-size times larger."""

from dataclasses import dataclass

import numpy as np

from pita.likely import Signature
from pita.stats import ulp_distance
from pita_lab.experiment import (
    LOSS_FN,
    Accepts,
    CompileFails,
    Diagnosed,
    Experiment,
    Mapped,
    Matches,
    Mismatches,
    PairClaim,
    Panics,
    Raises,
    ScaledByMetadata,
    SourceRef,
)


@dataclass(frozen=True)
class ScaledWithinUlps(PairClaim):
    """Every element of `candidate` lies within `ulps` float32 ULPs of `reference` times the
    metadata value `key` (the product rounded to float32): the product a reader can redo by hand,
    and how far the port's own rounding puts it from that product. Measured from the dumps."""

    key: str
    ulps: int

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        factor = float(reference.metadata[self.key])
        apart = {}
        for name in sorted(reference.tensors):
            product = (reference.tensors[name].astype(np.float64) * factor).astype(np.float32).ravel()
            apart[name] = int(ulp_distance(product, candidate.tensors[name].astype(np.float32).ravel()).max())
        observed = "; ".join(f"{name}: at most {n} ulp" for name, n in apart.items())
        return f"{self.candidate} within {self.ulps} ulp of {self.key}={factor:g} × {self.reference}", observed, max(apart.values()) <= self.ulps


def magnitude(record) -> str:
    factor = record.comparison("torch-mean", "burn-nomean").tensors[0].diagnosis[0].params["factor"]
    return f"梯度 ×{factor:.6g}"


EXPERIMENT = Experiment(
    id="p12",
    title="loss 忘了 mean，梯度大了 batch 倍",
    fix="`loss.mean()` 后再 `backward()`",
    mainline="loss → backward",
    kind="silent",
    symptoms=("grad-scaled",),
    related=("p11a", "p11c", "p16", "port-encoder"),
    signature=(Signature("diagnosis", diagnosis="scale", factor="batch_size", phase="backward"),
               Signature("diagnosis", diagnosis="scale", factor="batch_size", phase="loss")),
    settings=(
        Mapped("CrossEntropyLoss.reduction", "CrossEntropyLoss.reduction", "mean", "Mean", "word", scope=LOSS_FN),
        Mapped("BCEWithLogitsLoss.reduction", "BinaryCrossEntropyLoss.reduction", "mean", "Mean", "word", scope=LOSS_FN),
        Mapped("BCELoss.reduction", "BinaryCrossEntropyLoss.reduction", "mean", "Mean", "word", scope=LOSS_FN),
        Mapped("MSELoss.reduction", "MseLoss.reduction", "mean", "Mean", "word", scope=LOSS_FN),
    ),
    torch_variants=("nonscalar", "mean"),
    burn_variants=("nomean", "mean", "guard"),
    comparisons=(("torch-mean", "burn-mean"), ("torch-mean", "burn-nomean")),
    sources=(
        SourceRef("burn-autodiff", "src/grads.rs", "Gradients::new_with_hook", "float_ones("),
        SourceRef("burn-nn", "src/loss/mse.rs", "MseLoss::forward", "Reduction::Mean | Reduction::Auto"),
        SourceRef("burn-autodiff", "src/grads.rs", "Gradients::new", "Self::new_with_hook::<B>(root_node, root_tensor, None)"),
    ),
    magnitude=magnitude,
    claims=(
        Raises("torch-rejects-nonscalar", "PyTorch 拒绝对逐样本 loss 执行 `backward()`",
               "torch", "nonscalar", "RuntimeError", "grad can be implicitly created only for scalar outputs"),
        Accepts("burn-accepts-nonscalar", "burn 对逐样本 loss 执行 `backward()`", "burn", "nomean"),
        ScaledByMetadata("nomean-is-batch-times-mean", "burn-nomean = batch_size × torch-mean，逐元素在相对误差 1e-5 内成立",
                         "torch-mean", "burn-nomean", "batch_size"),
        ScaledWithinUlps("nomean-is-product-within-ulps",
                         "burn-nomean 的每个元素和「torch-mean × batch_size」（乘积舍入到 f32）相差不超过 64 个 float32 ulp",
                         "torch-mean", "burn-nomean", "batch_size", ulps=64),
        Diagnosed("compare-names-the-factor", "compare 诊断出 scale，并指出倍数就是 batch 大小",
                  "torch-mean", "burn-nomean", "scale", "batch_size"),
        Matches("fix-matches", "burn-mean 在 atol 1e-6 下和 torch-mean 一致", "torch-mean", "burn-mean"),
        Mismatches("negative-control", "burn-nomean 对 torch-mean 报 MISMATCH", "torch-mean", "burn-nomean"),
        CompileFails("ce12-rejects-rank-2", "`backward_scalar` 在编译期拒绝 `[B, 1]` 的 loss",
                     "ce12", "E0308", "expected `1`, found `2`"),
        Panics("guard-panics-on-rank-1", "`backward_scalar` 在运行期拦下 `[B]` 的 loss",
               "burn", "guard", "loss must be reduced (mean/sum) before backward"),
    ),
)
