"""p20a: with PyTorch's lr, betas and epsilon, burn's Adam still drifts from torch.optim.Adam, because
burn computes the bias corrections `1 - β^t` in f32 while PyTorch computes them in Python floats."""

from __future__ import annotations

from pita_lab.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, Relates, SameHparam, SourceRef


def _w_row(record, reference, candidate):
    return next(t for t in record.comparison(reference, candidate).result["tensors"] if t["name"] == "w")


def magnitude(record) -> str:
    row = _w_row(record, "torch-adam", "burn-port")
    steps = record.program("torch", "adam").metadata["steps"]
    return f"{steps} 步后参数差 {row['max_abs_diff']:.2g}（{row['max_ulp']} ulp）"


EXPERIMENT = Experiment(
    id="p20a",
    title="超参数全对齐，Adam 仍然漂移：偏差修正在 f32 里算",
    mainline="optimizer",
    kind="silent",
    torch_variants=("adam", "f32-bias", "f64-bias"),
    burn_variants=("port", "fixed"),
    comparisons=(
        ("torch-adam", "burn-port"),
        ("torch-f32-bias", "burn-port"),
        ("torch-adam", "torch-f32-bias"),
        ("torch-adam", "torch-f64-bias"),
        ("torch-adam", "burn-fixed"),
        ("torch-f64-bias", "burn-fixed"),
    ),
    sources=(
        SourceRef("burn-optim", "src/optim/adam.rs", "AdamConfig", "beta_2: f32,"),
        SourceRef("burn-optim", "src/optim/adam.rs", "AdaptiveMomentum::transform",
                  "let bias_correction2_sqrt = (1.0 - self.beta_2.powi(time)).sqrt();"),
        SourceRef("burn-optim", "src/optim/adam.rs", "AdaptiveMomentum::transform",
                  "let combined_factor = bias_correction2_sqrt / (1.0 - self.beta_1.powi(time));"),
        SourceRef("burn-optim", "src/optim/adam.rs", "AdaptiveMomentum::transform",
                  ".add_scalar(self.epsilon * bias_correction2_sqrt)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-adam-runs", "PyTorch Adam runs the steps", "torch", "adam"),
        Accepts("burn-port-runs", "burn Adam with PyTorch's hyper-parameters runs the same steps (exit 0)", "burn", "port"),
        SameHparam("same-beta-1", "burn's AdamConfig uses PyTorch's beta_1 (at f32)", "torch-adam", "burn-port", "beta_1"),
        SameHparam("same-beta-2", "burn's AdamConfig uses PyTorch's beta_2 (at f32)", "torch-adam", "burn-port", "beta_2"),
        SameHparam("same-epsilon", "burn's AdamConfig uses PyTorch's epsilon (at f32)", "torch-adam", "burn-port", "epsilon"),
        SameHparam("same-lr", "both sides step with the same learning rate", "torch-adam", "burn-port", "lr"),
        Mismatches("negative-control", "burn Adam against torch Adam is a MISMATCH at atol 1e-6", "torch-adam", "burn-port"),
        Diagnosed("drift-is-an-offset", "compare finds one common offset: every parameter is short by about the same amount",
                  "torch-adam", "burn-port", "offset", tensors=("w",)),
        Mismatches("f32-bias-reproduces-drift", "torch Adam hand-written with f32 bias corrections mismatches torch.optim.Adam",
                   "torch-adam", "torch-f32-bias"),
        Relates("f32-bias-is-burn", "burn's Adam equals the hand-written f32-bias step within 2 ulp (the same IEEE operations on both sides)",
                "torch-f32-bias", "burn-port", "w", "identity", ulps=2),
        Matches("f64-bias-matches-torch", "the same hand-written step with f64 bias corrections matches torch.optim.Adam",
                "torch-adam", "torch-f64-bias"),
        Matches("fix-matches", "burn Adam step with f64 bias corrections matches torch Adam at atol 1e-6", "torch-adam", "burn-fixed"),
        Relates("fix-is-f64-bias", "the burn fix equals the hand-written f64-bias step within 2 ulp (the same IEEE operations on both sides)",
                "torch-f64-bias", "burn-fixed", "w", "identity", ulps=2),
    ),
)
