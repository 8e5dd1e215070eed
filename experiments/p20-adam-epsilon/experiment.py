"""p20: burn's Adam and AdaGrad default epsilon is 1e-5 (PyTorch: 1e-8, 1e-10); small gradients get
much smaller steps.

Also defines the claims the optimizer experiments (p20–p23) share: a hyper-parameter recorded in
two dumps' metadata is or is not the same, and one dump's values are smaller (or larger) in size
than another's."""

from __future__ import annotations

from pita.likely import Signature
from pita_lab.experiment import Accepts, DefaultsDiffer, Experiment, Matches, Mismatches, Panics, SameHparam, SmallerInSize, SourceRef


def magnitude(record) -> str:
    torch_w = record.program("torch", "adam").tensors["w"][0]
    burn_w = record.program("burn", "adam-port").tensors["w"][0]
    return f"最小梯度处步长小 {torch_w / burn_w:.3g} 倍"


EXPERIMENT = Experiment(
    id="p20",
    title="Adam 的 epsilon 默认值比 PyTorch 大，小梯度的步长缩水",
    fix="`AdamConfig::new().with_epsilon(1e-8)`（`AdamWConfig` 同）",
    mainline="optimizer",
    kind="silent",
    symptoms=("slow-drift", "update-differs"),
    related=("p10b", "p20a", "p21", "p23", "p24", "port-encoder"),
    reports=('tracel-ai/burn#614',),
    signature=Signature("setting", settings=("Adam.eps", "AdamW.eps", "Adagrad.eps")),
    torch_variants=("adam", "adagrad", "defaults"),
    burn_variants=("adam-port", "adam-fixed", "adagrad-port", "adagrad-fixed", "guard", "defaults"),
    comparisons=(
        ("torch-adam", "burn-adam-fixed"), ("torch-adam", "burn-adam-port"),
        ("torch-adagrad", "burn-adagrad-fixed"), ("torch-adagrad", "burn-adagrad-port"),
    ),
    sources=(
        SourceRef("burn-optim", "src/optim/adam.rs", "AdamConfig::build", "epsilon: self.epsilon,"),
        SourceRef("burn-optim", "src/optim/adam.rs", "AdaptiveMomentum::transform", ".add_scalar(self.epsilon * bias_correction2_sqrt)"),
        SourceRef("burn-optim", "src/optim/adagrad.rs", "LrDecay::transform", ".div(state.sum.clone().sqrt().add_scalar(self.epsilon))"),
        SourceRef("burn-optim", "src/optim/adamw.rs", "AdaptiveMomentumW::transform", "moment_2_corrected.sqrt().add_scalar(self.epsilon)"),
        SourceRef("burn-optim", "src/optim/rmsprop.rs", "RmsPropMomentum::transform", ".sqrt().add_scalar(self.epsilon)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-adam-runs", "PyTorch Adam 跑完这几步", "torch", "adam"),
        Accepts("burn-adam-port-runs", "burn `AdamConfig::new()` 跑完同样的几步（exit 0）", "burn", "adam-port"),
        DefaultsDiffer("adam-eps-differs", "`AdamConfig::new()` 用的 epsilon 和 `torch.optim.Adam` 不同",
                       "torch-adam", "burn-adam-port", "epsilon", "Adam 的 epsilon（`AdamConfig` / `torch.optim.Adam`）",
                       maps=("Adam.eps", "AdamConfig.epsilon")),
        SmallerInSize("adam-port-steps-smaller", "burn-port 的每一步都不比 PyTorch 的大，有些更小",
                      "torch-adam", "burn-adam-port", "w"),
        Mismatches("adam-negative-control", "burn `AdamConfig::new()` 对 torch Adam 报 MISMATCH", "torch-adam", "burn-adam-port"),
        SameHparam("adam-fixed-eps-same", "`with_epsilon(1e-8)` 用的是 PyTorch 的 epsilon", "torch-adam", "burn-adam-fixed", "epsilon"),
        Matches("adam-fix-matches", "burn `with_epsilon(1e-8)` 在 atol 1e-6 下和 torch Adam 一致", "torch-adam", "burn-adam-fixed"),
        DefaultsDiffer("adagrad-eps-differs", "`AdaGradConfig::new()` 用的 epsilon 和 `torch.optim.Adagrad` 不同",
                       "torch-adagrad", "burn-adagrad-port", "epsilon", "AdaGrad 的 epsilon（`AdaGradConfig` / `torch.optim.Adagrad`）",
                       maps=("Adagrad.eps", "AdaGradConfig.epsilon")),
        Mismatches("adagrad-negative-control", "burn `AdaGradConfig::new()` 对 torch Adagrad 报 MISMATCH",
                   "torch-adagrad", "burn-adagrad-port"),
        Matches("adagrad-fix-matches", "burn `with_epsilon(1e-10)` 在 atol 1e-6 下和 torch Adagrad 一致", "torch-adagrad", "burn-adagrad-fixed"),
        Panics("guard-panics-on-default-eps", "`assert_torch_hparams` 对照 PyTorch 的取值，拦下 `AdamConfig::new()`",
               "burn", "guard", "optimizer hyper-parameter differs from PyTorch: AdamConfig.epsilon"),
    ),
)
