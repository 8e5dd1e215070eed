"""p16: two losses share an intermediate. PyTorch backpropagates through it twice with
retain_graph=True; burn consumes the tape on the first backward and panics on the second."""

from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, Panics, Raises, SourceRef, TensorsCompare

TORCH_SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-retain", "burn-detach").tensors if t.name == "w.grad")
    return f"第二次 backward 即 panic；用 detach 绕过则 w 梯度差 {row.max_abs_diff:.3g}"


EXPERIMENT = Experiment(
    id="p16",
    title="共享中间结果的两个 loss 各 backward 一次：burn 没有 retain_graph，第二次 panic",
    mainline="backward",
    kind="panic",
    symptoms=("panic", "grad-differs"),
    related=("p12", "p18"),
    reports=('tracel-ai/burn#2077',),
    torch_variants=("noretain", "retain"),
    burn_variants=("port", "detach", "fixed", "recompute"),
    comparisons=(("torch-retain", "burn-fixed"), ("torch-retain", "burn-recompute"), ("torch-retain", "burn-detach")),
    sources=(
        SourceRef("burn-tensor", "src/tensor/api/autodiff.rs", "Tensor::backward", "backward_impl(&self.primitive)"),
        SourceRef("burn-autodiff", "src/runtime/server.rs", "AutodiffServer::backward", "Cannot run backward: graph tape has already been consumed"),
        SourceRef("burn-autodiff", "src/runtime/server.rs", "AutodiffServer::build_tape", "consume_node(id)"),
    ),
    magnitude=magnitude,
    claims=(
        Raises("torch-rejects-without-retain", "没有 `retain_graph` 时，PyTorch 拒绝第二次 backward",
               "torch", "noretain", "RuntimeError", TORCH_SECOND_BACKWARD),
        Accepts("torch-retain-runs", "`retain_graph=True` 时两次 backward 都能跑，`.grad` 累加", "torch", "retain"),
        Panics("burn-panics-on-second-backward", "burn 穿过共享的 `h` 做第二次 backward 时 panic",
               "burn", "port", "graph tape has already been consumed"),
        Mismatches("negative-control", "为第二个 loss detach `h` 能跑，但对 torch-retain 报 MISMATCH",
                   "torch-retain", "burn-detach"),
        TensorsCompare("detach-keeps-v", "detach `h` 后 `v.grad` 仍然一致：只有 `w` 少了 `l2` 那一份",
                     "torch-retain", "burn-detach", ("v.grad",)),
        Matches("fix-matches", "对 `l1 + l2` 做一次 backward，在 atol 1e-6 下和 torch-retain 一致", "torch-retain", "burn-fixed"),
        Matches("recompute-matches", "为第二个 loss 重新跑一遍前向，在 atol 1e-6 下和 torch-retain 一致",
                "torch-retain", "burn-recompute"),
    ),
)
