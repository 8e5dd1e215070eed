"""p23: burn's `RmsPropConfig::new()` has momentum 0.9 (PyTorch RMSprop: 0) and epsilon 1e-5
(PyTorch: 1e-8); the momentum buffer makes every step after the first much longer."""

from __future__ import annotations

from pita.likely import Signature
from pita_lab.experiment import Accepts, DefaultsDiffer, Diagnosed, Experiment, Matches, Mismatches, Panics, SameHparam, SmallerInSize, SourceRef


def magnitude(record) -> str:
    steps = record.program("torch", "rmsprop").metadata["steps"]
    torch_w = record.program("torch", "rmsprop").tensors[f"w.step{steps}"][0]
    burn_w = record.program("burn", "rmsprop-port").tensors[f"w.step{steps}"][0]
    return f"{steps} 步后位移大 {burn_w / torch_w:.3g} 倍"


EXPERIMENT = Experiment(
    id="p23",
    title="RMSProp 默认带动量，步子越走越大",
    fix="`RmsPropConfig::new().with_momentum(0.0)`",
    mainline="optimizer",
    kind="silent",
    symptoms=("slow-drift", "update-differs"),
    related=("p20", "p22"),
    signature=Signature("setting", settings=("RMSprop.momentum", "RMSprop.eps")),
    torch_variants=("rmsprop",),
    burn_variants=("rmsprop-port", "rmsprop-momentum", "rmsprop-fixed", "guard"),
    comparisons=(
        ("torch-rmsprop", "burn-rmsprop-fixed"), ("torch-rmsprop", "burn-rmsprop-port"),
        ("torch-rmsprop", "burn-rmsprop-momentum"),
    ),
    sources=(
        SourceRef("burn-optim", "src/optim/rmsprop.rs", "RmsPropMomentum::transform", "if self.momentum > 0."),
        SourceRef("burn-optim", "src/optim/rmsprop.rs", "RmsPropMomentum::transform", "Some(state) => state.buf.mul_scalar(self.momentum).add(grad),"),
        SourceRef("burn-optim", "src/optim/rmsprop.rs", "RmsPropMomentum::transform", ".sqrt().add_scalar(self.epsilon)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-rmsprop-runs", "PyTorch RMSprop 跑完这几步", "torch", "rmsprop"),
        Accepts("burn-port-runs", "burn `RmsPropConfig::new()` 跑完同样的几步（exit 0）", "burn", "rmsprop-port"),
        DefaultsDiffer("momentum-differs", "`RmsPropConfig::new()` 带动量，torch RMSprop 不带", "torch-rmsprop", "burn-rmsprop-port",
                       "momentum", "RMSProp 的动量 `momentum`（`RmsPropConfig` / `torch.optim.RMSprop`）",
                       maps=("RMSprop.momentum", "RmsPropConfig.momentum")),
        DefaultsDiffer("epsilon-differs", "`RmsPropConfig::new()` 用的 epsilon 也不同", "torch-rmsprop", "burn-rmsprop-port",
                       "epsilon", "RMSProp 的 epsilon（`RmsPropConfig` / `torch.optim.RMSprop`）",
                       maps=("RMSprop.eps", "RmsPropConfig.epsilon")),
        SameHparam("alpha-same", "平滑常数 alpha 相同", "torch-rmsprop", "burn-rmsprop-port", "alpha"),
        SmallerInSize("port-moves-farther", "最后一步之后，burn-port 在每个元素上都比 PyTorch 走得更远",
                      "torch-rmsprop", "burn-rmsprop-port", "w.step3", larger=True),
        Diagnosed("compare-sees-a-scale", "compare 把后面几步诊断为一个统一的 scale（动量）",
                  "torch-rmsprop", "burn-rmsprop-port", "scale", tensors=("w.step2", "w.step3")),
        Mismatches("negative-control", "burn `RmsPropConfig::new()` 对 torch RMSprop 报 MISMATCH", "torch-rmsprop", "burn-rmsprop-port"),
        Mismatches("momentum-only-still-differs", "只改 `with_momentum(0.0)` 仍然报 MISMATCH（epsilon）",
                   "torch-rmsprop", "burn-rmsprop-momentum"),
        SameHparam("fixed-momentum-same", "改好的配置用的是 PyTorch 的动量", "torch-rmsprop", "burn-rmsprop-fixed", "momentum"),
        SameHparam("fixed-epsilon-same", "改好的配置用的是 PyTorch 的 epsilon", "torch-rmsprop", "burn-rmsprop-fixed", "epsilon"),
        Matches("fix-matches", "burn `with_momentum(0.0).with_epsilon(1e-8)` 在 atol 1e-6 下和 torch RMSprop 一致",
                "torch-rmsprop", "burn-rmsprop-fixed"),
        Panics("guard-panics-on-momentum", "`assert_torch_hparams` 对照 PyTorch 的取值，拦下 `RmsPropConfig::new()`",
               "burn", "guard", "optimizer hyper-parameter differs from PyTorch: RmsPropConfig.momentum"),
    ),
)
