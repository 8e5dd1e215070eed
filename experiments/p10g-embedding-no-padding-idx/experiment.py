"""p10g: burn's Embedding has no padding_idx: the padding row gets gradient (one per padding
token under a sum loss) and moves on the first step, and a fresh layer initialises it randomly."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita_lab.experiment import Accepts, Claim, Experiment, Mapped, Matches, Mismatches, SourceRef


@dataclass(frozen=True)
class PadRowGrad(Claim):
    """Row `padding_idx` of `weight.grad` in `dump` (both from the dump's metadata): with `counted`,
    every element equals `padding_tokens`, the gradient of a sum loss for a row looked up that
    many times; without, every element is zero, as `padding_idx` promises."""

    id: str
    text: str
    dump: str
    counted: bool

    def observe(self, record, out):
        found = read_dump(out / f"{self.dump}.safetensors")
        pad, tokens = int(found.metadata["padding_idx"]), int(found.metadata["padding_tokens"])
        row = found.tensors["weight.grad"].astype(np.float64)[pad]
        want = tokens if self.counted else 0
        why = f"padding_tokens={tokens}" if self.counted else "no gradient"
        return (f"weight.grad[{pad}] = {want:g} ({why})",
                f"weight.grad[{pad}] = {row.tolist()}", bool(np.all(row == want)))


@dataclass(frozen=True)
class AllZero(Claim):
    """Every element of `tensor` in `dump` is zero."""

    id: str
    text: str
    dump: str
    tensor: str

    def observe(self, record, out):
        values = read_dump(out / f"{self.dump}.safetensors").tensors[self.tensor]
        return f"{self.tensor} all zero", f"{self.tensor} = {values.ravel().tolist()}", bool(np.all(values == 0))


def magnitude(record) -> str:
    burn, torch = record.program("burn", "port"), record.program("torch", "pad")
    pad = int(burn.metadata["padding_idx"])
    rows = record.comparison("torch-pad", "burn-port").tensors
    width = next(t for t in rows if t.name == "weight.grad").shape[1]
    return f"padding 行梯度 {burn.tensors['weight.grad'][width * pad]:g}（PyTorch {torch.tensors['weight.grad'][width * pad]:g}）"


EXPERIMENT = Experiment(
    id="p10g",
    title="Embedding 没有 padding_idx：padding 行照样有梯度、被更新",
    mainline="forward",
    kind="silent",
    symptoms=("init-differs", "grad-differs"),
    related=("p08", "p11b"),
    settings=(
        Mapped("Embedding.padding_idx", "Embedding.", None, None, convert="in_code"),
    ),  # burn's Embedding has none: a port supplies it in code (pita::padding_idx)
    torch_variants=("pad", "init"),
    burn_variants=("port", "fixed", "init"),
    comparisons=(("torch-pad", "burn-fixed"), ("torch-pad", "burn-port"), ("torch-init", "burn-init")),
    sources=(
        SourceRef("burn-nn", "src/modules/embedding.rs", "Embedding::forward", "embedding(self.weight.val(), input)"),
        SourceRef("burn-nn", "src/modules/embedding.rs", "EmbeddingConfig::init", ".init([self.n_embedding, self.d_model], device);"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 `Embedding(padding_idx=0)` 跑完前向、反向和一步更新", "torch", "pad"),
        Accepts("burn-runs", "burn 的 Embedding 跑同样的流程，不报错", "burn", "port"),
        PadRowGrad("torch-pad-row-no-grad", "PyTorch 不给 padding 行梯度", "torch-pad", counted=False),
        PadRowGrad("burn-pad-row-grad", "burn 给 padding 行梯度，每个 padding token 一个单位", "burn-port", counted=True),
        Mismatches("port-mismatches", "burn 的梯度、一步更新的结果和下一次输出对 PyTorch 报 MISMATCH", "torch-pad", "burn-port"),
        Matches("fixed-matches", "把 padding 位置的查表结果 detach 后，在 atol 1e-6 下和 PyTorch 一致", "torch-pad", "burn-fixed"),
        AllZero("torch-init-zero", "新建的 PyTorch `Embedding(padding_idx=0)` 的 padding 行初始为 0",
                "torch-init", "weight.pad_row"),
        Mismatches("init-mismatches", "新建的 burn Embedding 的 padding 行不是 0：MISMATCH", "torch-init", "burn-init"),
    ),
)
