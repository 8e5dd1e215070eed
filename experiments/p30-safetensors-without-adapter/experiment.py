"""p30: a PyTorch Linear state_dict saved with safetensors and loaded with burn's SafetensorsStore
without PyTorchToBurnAdapter: a square weight loads untransposed, silently."""

from dataclasses import dataclass

import numpy as np

from pita.likely import Signature
from pita_lab.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, PairClaim, Panics, SourceRef


@dataclass(frozen=True)
class ComputesWithWeight(PairClaim):
    """`candidate`'s `y` equals `x @ W + b` built from `reference`'s dump (`x`, `fc.weight` as
    `W`, `fc.bias` as `b`), with `W` used as stored (`transposed=False`) or as `Wᵀ`
    (`transposed=True`, what `nn.Linear` computes), within `atol`. Measured from the dumps."""

    transposed: bool
    atol: float = 1e-6

    def observe(self, record, out):
        ref, cand = self.dumps(out)
        x, w, b = (ref.tensors[k].astype(np.float64) for k in ("x", "fc.weight", "fc.bias"))
        predicted = x @ (w.T if self.transposed else w) + b
        diff = float(np.max(np.abs(cand.tensors["y"].astype(np.float64) - predicted)))
        formula = "x·Wᵀ + b" if self.transposed else "x·W + b"
        return f"y = {formula} (W as PyTorch stores it), |diff| <= {self.atol:g}", f"max|diff| {diff:.2e}", diff <= self.atol


def magnitude(record) -> str:
    row = next(t for t in record.comparison("torch-ref", "burn-port").tensors if t.name == "y")
    return f"输出差 {row.max_abs_diff:.2g}"


EXPERIMENT = Experiment(
    id="p30",
    title="SafetensorsStore 不加适配器，方阵 Linear 权重不转置就加载",
    fix="`SafetensorsStore::from_file(path).with_from_adapter(PyTorchToBurnAdapter)`",
    mainline="save/load PyTorch weights",
    kind="silent",
    symptoms=("wrong-after-load", "panic"),
    related=("p07", "p31", "port-encoder"),
    signature=Signature("diagnosis", diagnosis="transpose", tensor="weight", rank=2, phase="parameters"),
    also=("p07",),
    torch_variants=("ref",),
    burn_variants=("port", "nonsquare", "guard", "fixed"),
    comparisons=(("torch-ref", "burn-port"), ("torch-ref", "burn-fixed")),
    sources=(
        SourceRef("burn-store", "src/safetensors/store.rs", "SafetensorsStore::from_file", "from_adapter: Box::new(IdentityAdapter),"),
        SourceRef("burn-store", "src/adapter.rs", "adapt_pytorch_tensor", "return transpose_2d_tensor(tensor);"),
        SourceRef("burn-nn", "src/modules/linear.rs", "Linear::forward", "linear("),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-saves", "PyTorch 用 safetensors 保存 state_dict，并运行这一层", "torch", "ref"),
        Accepts("burn-loads-square", "burn 用普通的 `SafetensorsStore` 加载方阵权重，不报错", "burn", "port"),
        ComputesWithWeight("port-computes-xw", "burn-port 计算 x·W + b，W 是未经转置的 PyTorch 权重",
                           "torch-ref", "burn-port", transposed=False),
        Mismatches("negative-control", "burn-port 对 torch-ref 报 MISMATCH", "torch-ref", "burn-port"),
        Diagnosed("compare-finds-transpose", "compare 把加载的权重诊断为转置",
                  "torch-ref", "burn-port", "transpose", tensors=("fc.weight",)),
        Panics("nonsquare-fails", "非方阵层加载失败，报形状不匹配", "burn", "nonsquare", "ShapeMismatch"),
        Matches("fix-matches", "用 `PyTorchToBurnAdapter` 后，burn 和 torch-ref 一致", "torch-ref", "burn-fixed"),
        Panics("guard-panics", "`assert_written_by_burn` 拦下 PyTorch 写的文件",
               "burn", "guard", "was not written by burn (no producer=burn in its metadata)"),
    ),
)
