"""p23: burn's `RmsPropConfig::new()` has momentum 0.9 (PyTorch RMSprop: 0) and epsilon 1e-5
(PyTorch: 1e-8); the momentum buffer makes every step after the first much longer."""

from __future__ import annotations

from pita.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, Panics, SameHparam, SmallerInSize, SourceRef


def magnitude(record) -> str:
    steps = record.program("torch", "rmsprop").metadata["steps"]
    torch_w = record.program("torch", "rmsprop").tensors[f"w.step{steps}"][0]
    burn_w = record.program("burn", "rmsprop-port").tensors[f"w.step{steps}"][0]
    return f"{steps} 步后位移大 {burn_w / torch_w:.3g} 倍"


EXPERIMENT = Experiment(
    id="p23",
    title="RMSProp 默认带动量，步子越走越大",
    mainline="optimizer",
    kind="silent",
    torch_script="experiments/pytorch/p23_rmsprop_momentum.py",
    burn_binary="p23",
    torch_variants=("rmsprop",),
    burn_variants=("rmsprop-port", "rmsprop-momentum", "rmsprop-fixed", "guard"),
    comparisons=(
        ("torch-rmsprop", "burn-rmsprop-fixed"), ("torch-rmsprop", "burn-rmsprop-port"),
        ("torch-rmsprop", "burn-rmsprop-momentum"),
    ),
    compile_fail=(),
    sources=(
        SourceRef("burn-optim", "src/optim/rmsprop.rs", "RmsPropMomentum::transform", "if self.momentum > 0."),
        SourceRef("burn-optim", "src/optim/rmsprop.rs", "RmsPropMomentum::transform", "Some(state) => state.buf.mul_scalar(self.momentum).add(grad),"),
        SourceRef("burn-optim", "src/optim/rmsprop.rs", "RmsPropMomentum::transform", ".sqrt().add_scalar(self.epsilon)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-rmsprop-runs", "PyTorch RMSprop runs the steps", "torch", "rmsprop"),
        Accepts("burn-port-runs", "burn RmsPropConfig::new() runs the same steps (exit 0)", "burn", "rmsprop-port"),
        SameHparam("momentum-differs", "RmsPropConfig::new() uses momentum, torch RMSprop does not", "torch-rmsprop", "burn-rmsprop-port",
                   "momentum", same=False),
        SameHparam("epsilon-differs", "RmsPropConfig::new() also uses another epsilon", "torch-rmsprop", "burn-rmsprop-port",
                   "epsilon", same=False),
        SameHparam("alpha-same", "the smoothing constant alpha is the same", "torch-rmsprop", "burn-rmsprop-port", "alpha"),
        SmallerInSize("port-moves-farther", "after the last step burn-port has moved farther than PyTorch in every element",
                      "torch-rmsprop", "burn-rmsprop-port", "w.step3", larger=True),
        Diagnosed("compare-sees-a-scale", "compare diagnoses the later steps as a common scale (momentum)",
                  "torch-rmsprop", "burn-rmsprop-port", "scale", tensors=("w.step2", "w.step3")),
        Mismatches("negative-control", "burn RmsPropConfig::new() against torch RMSprop is a MISMATCH", "torch-rmsprop", "burn-rmsprop-port"),
        Mismatches("momentum-only-still-differs", "with_momentum(0.0) alone is still a MISMATCH (epsilon)",
                   "torch-rmsprop", "burn-rmsprop-momentum"),
        SameHparam("fixed-momentum-same", "the fixed config has PyTorch's momentum", "torch-rmsprop", "burn-rmsprop-fixed", "momentum"),
        SameHparam("fixed-epsilon-same", "the fixed config has PyTorch's epsilon", "torch-rmsprop", "burn-rmsprop-fixed", "epsilon"),
        Matches("fix-matches", "burn with_momentum(0.0).with_epsilon(1e-8) matches torch RMSprop at atol 1e-6",
                "torch-rmsprop", "burn-rmsprop-fixed"),
        Panics("guard-panics-on-momentum", "assert_torch_hparams rejects RmsPropConfig::new() against PyTorch's values",
               "burn", "guard", "optimizer hyper-parameter differs from PyTorch: RmsPropConfig.momentum"),
    ),
)
