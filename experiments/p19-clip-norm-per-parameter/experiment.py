"""p19: gradient clipping by norm. burn's `GradientClipping::Norm` clips each parameter tensor by
its own norm; `torch.nn.utils.clip_grad_norm_` clips every gradient by one global norm."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import (
    Accepts,
    Claim,
    Diagnosed,
    Experiment,
    Matches,
    Mismatches,
    Panics,
    SourceRef,
)

UPDATES = ("w1.update", "w2.update")


@dataclass(frozen=True)
class UpdateNorms(Claim):
    """In dump `name`, the L2 norm of the `tensors` divided by the dump's `lr` equals its
    `max_norm` metadata: each tensor's own norm (`scope="each"`) or their norm taken together
    (`scope="total"`), within relative `rtol`. Measured from the dump."""

    id: str
    text: str
    name: str
    tensors: tuple[str, ...]
    scope: str  # "each" or "total"
    rtol: float = 1e-5

    def observe(self, record, out):
        dump = read_dump(out / f"{self.name}.safetensors")
        max_norm, lr = float(dump.metadata["max_norm"]), float(dump.metadata["lr"])
        grads = [dump.tensors[t].astype(np.float64).ravel() / lr for t in self.tensors]
        if self.scope == "each":
            norms = [float(np.linalg.norm(g)) for g in grads]
            observed = ", ".join(f"|{t}|={n:.7g}" for t, n in zip(self.tensors, norms))
        else:
            norms = [float(np.linalg.norm(np.concatenate(grads)))]
            observed = f"|{' ⊕ '.join(self.tensors)}|={norms[0]:.7g}"
        ok = all(abs(n - max_norm) <= self.rtol * max_norm for n in norms)
        return f"{self.scope} norm = max_norm {max_norm:g} ±{self.rtol:g}", observed, ok


def factors(record) -> dict[str, float]:
    """The scale compare finds on each update: burn-port / torch-global."""
    rows = record.comparison("torch-global", "burn-port").tensors
    return {t.name: d.params["factor"] for t in rows if t.name in UPDATES for d in t.diagnosis if d.kind == "scale"}


def magnitude(record) -> str:
    found = factors(record)
    return "，".join(f"{name.split('.')[0]} 更新大 {found[name]:.3g} 倍" for name in UPDATES)


EXPERIMENT = Experiment(
    id="p19",
    title="按范数裁剪梯度：burn 逐个参数裁，PyTorch 全局裁",
    fix="去掉 `GradientClippingConfig::Norm`，用 `pita::clip_norm::clip_grad_norm` 按全部梯度的总范数裁剪",
    mainline="clipping and accumulation",
    kind="silent",
    symptoms=("update-differs",),
    related=("p18",),
    reports=('anthonytorlucci/rlevo#328',),
    torch_variants=("global", "per-tensor"),
    burn_variants=("port", "global", "guard"),
    comparisons=(
        ("torch-global", "burn-port"),
        ("torch-per-tensor", "burn-port"),
        ("torch-global", "burn-global"),
    ),
    sources=(
        SourceRef("burn-optim", "src/grad_clipping/base.rs", "GradientClipping::clip_by_norm",
                  "let norm = Self::l2_norm(grad.clone());"),
        SourceRef("burn-optim", "src/optim/module/module_optimizer.rs", "ModuleOptimizerMapper::map_float",
                  "g_clipping.clip_gradient(grad)"),
        SourceRef("burn-optim", "src/optim/sgd.rs", "SgdConfig::init", "optim = optim.with_grad_clipping(config.init());"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-global-runs", "PyTorch 用 `clip_grad_norm_` 对全部参数整体裁剪，然后更新", "torch", "global"),
        Accepts("burn-port-runs", "burn 在优化器配置里设 `GradientClippingConfig::Norm`，然后更新", "burn", "port"),
        UpdateNorms("torch-total-norm", "PyTorch：所有更新合在一起的范数是 `max_norm`",
                    "torch-global", UPDATES, "total"),
        UpdateNorms("burn-each-norm", "burn：每个参数的更新各自的范数都是 `max_norm`",
                    "burn-port", UPDATES, "each"),
        Mismatches("negative-control", "burn-port 对 torch-global 报 MISMATCH", "torch-global", "burn-port"),
        Diagnosed("compare-finds-per-tensor-scales", "compare 在每个更新上都发现 scale（每个张量的倍数不同）",
                  "torch-global", "burn-port", "scale", tensors=UPDATES),
        Matches("port-is-per-tensor", "burn-port 和 PyTorch 逐个参数分别裁剪的结果一致",
                "torch-per-tensor", "burn-port"),
        Matches("fix-matches", "先按全局范数裁剪、再做普通的 SGD 更新，和 torch-global 一致", "torch-global", "burn-global"),
        Panics("guard-panics", "`assert_no_per_tensor_norm_clipping` 拦下配了 `GradientClipping::Norm` 的优化器",
               "burn", "guard", "GradientClipping::Norm clips each parameter tensor by its own norm"),
    ),
)
