"""p29: burn's InstanceNorm is affine by default (learnable gamma/beta), PyTorch's is not: the same
at initialisation, different after the first optimizer step."""

from pita.likely import Signature
from pita_lab.experiment import Accepts, DefaultsDiffer, Experiment, Matches, Mismatches, SourceRef, TensorsCompare


def magnitude(record) -> str:
    steps = record.program("burn", "port").metadata["steps"]
    rows = {t.name: t for t in record.comparison("torch-ref", "burn-port").tensors}
    return f"初始一致；{steps} 步 SGD 后输出差 {rows[f'out.step{steps}'].max_abs_diff:.2g}"


EXPERIMENT = Experiment(
    id="p29",
    title="InstanceNorm 默认带可学习的 γ/β（PyTorch 默认不带），训练一步就分叉",
    fix="`InstanceNormConfig::new(c).with_affine(false)`（`nn.InstanceNorm*d` 的默认）",
    mainline="train/eval",
    kind="silent",
    symptoms=("slow-drift", "init-differs"),
    related=("p08", "p26", "p31"),
    signature=Signature("setting", settings=("InstanceNorm1d|InstanceNorm2d|InstanceNorm3d.affine",)),
    torch_variants=("ref", "affine"),
    burn_variants=("fixed", "port"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-port"), ("torch-affine", "burn-port")),
    sources=(
        SourceRef("burn-nn", "src/modules/norm/instance.rs", "InstanceNormConfig::init", "let (gamma, beta) = if self.affine {"),
        SourceRef("burn-nn", "src/modules/norm/instance.rs", "InstanceNorm::forward", "group_norm(input, gamma, beta, num_groups, self.epsilon, self.affine)"),
    ),
    magnitude=magnitude,
    claims=(
        DefaultsDiffer("defaults-differ", "默认的 `affine` 两边不同：PyTorch 的归一化层没有参数，burn 的有可学习的 γ/β",
                       "torch-ref", "burn-port", "affine", "InstanceNorm 的 `affine`（`InstanceNormConfig` / `nn.InstanceNorm1d`）",
                       maps=("InstanceNorm1d|InstanceNorm2d|InstanceNorm3d.affine", "InstanceNorm.affine")),
        Accepts("burn-port-runs", "burn 训练默认的 InstanceNorm，不报错", "burn", "port"),
        TensorsCompare("same-at-init", "还没有更新时两边输出一致（gamma = 1, beta = 0）",
                       "torch-ref", "burn-port", ("out.step0",)),
        TensorsCompare("differ-after-steps", "跑完这几步 SGD 后，输出和 Linear 权重都不同",
                       "torch-ref", "burn-port", ("out.step2", "fc.weight"), ok=False),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Matches("fix-matches", "burn-fixed（`.with_affine(false)`）和 torch-ref 一致", "torch-ref", "burn-fixed"),
        Matches("port-is-torch-affine", "burn 的默认配置和 PyTorch `InstanceNorm1d(affine=True)` 一致", "torch-affine", "burn-port"),
    ),
)
