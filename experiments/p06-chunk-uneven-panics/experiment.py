"""p06: burn's `chunk()` panics where PyTorch returns fewer chunks than asked (9 or 5 into 4)."""

from __future__ import annotations

from dataclasses import dataclass

from pita.dump import read_dump
from pita_lab.experiment import Accepts, Claim, Experiment, Matches, Mismatches, Panics, SourceRef


@dataclass(frozen=True)
class FewerPieces(Claim):
    """Dump `dump` holds fewer tensors named `<prefix>.<i>` than the number stored under `key` in
    its metadata (e.g. the chunks requested): the framework returned fewer pieces than asked."""

    id: str
    text: str
    dump: str
    prefix: str
    key: str

    def observe(self, record, out):
        dump = read_dump(out / f"{self.dump}.safetensors")
        asked = int(dump.metadata[self.key])
        pieces = sorted((n for n in dump.tensors if n.startswith(f"{self.prefix}.")), key=lambda n: int(n.split(".")[-1]))
        sizes = [int(dump.tensors[n].size) for n in pieces]
        return f"fewer than {self.key}={asked} pieces of {self.prefix}", f"{len(pieces)} pieces of sizes {sizes}", 0 < len(pieces) < asked


def magnitude(record) -> str:
    ref = record.program("torch", "ref")
    size = sum(len(values) for name, values in ref.tensors.items() if name.startswith("x."))
    return f"{size} 个元素 chunk({ref.metadata['chunks']}) 即 panic（exit {record.program('burn', 'port-9').exit_code}）"


EXPERIMENT = Experiment(
    id="p06",
    title="chunk() 分不满时 panic，PyTorch 返回更少的块",
    mainline="tensors and shapes",
    kind="panic",
    symptoms=("panic", "shape-axis"),
    related=("p03", "p10d"),
    torch_variants=("ref",),
    burn_variants=("port-9", "port-5", "fixed", "floor"),
    comparisons=(("torch-ref", "burn-fixed"), ("torch-ref", "burn-floor")),
    sources=(
        SourceRef("burn-tensor", "src/tensor/api/base.rs", "Tensor::chunk", "let chunk_size = (size / chunks) + 1;"),
        SourceRef("burn-tensor", "src/tensor/api/base.rs", "Tensor::chunk", "let remainder = size % chunk_size;"),
        SourceRef("burn-tensor", "src/tensor/api/check.rs", "TensorCheck::narrow", "length must be greater than 0"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-chunks", "PyTorch 把 9 个和 5 个元素各按 4 块切分", "torch", "ref"),
        FewerPieces("torch-fewer-x", "对 9 个元素，PyTorch 返回的块数少于要求的块数", "torch-ref", "x", "chunks"),
        FewerPieces("torch-fewer-y", "对 5 个元素，PyTorch 返回的块数少于要求的块数", "torch-ref", "y", "chunks"),
        Panics("burn-panics-9", "burn 对 9 个元素做 `chunk(4, 0)` 时 panic：最后一块会是空的",
               "burn", "port-9", "length must be greater than 0"),
        Panics("burn-panics-5", "burn 对 5 个元素做 `chunk(4, 0)` 时 panic：各块超出了张量的范围",
               "burn", "port-5", "start + length exceeds the size of the tensor"),
        Matches("fix-matches", "`split(ceil(size / 4))` 和 PyTorch 的 `chunk(4)` 一致", "torch-ref", "burn-fixed"),
        Mismatches("negative-control", "向下取整的 `split(size / 4)` 对 PyTorch 报 MISMATCH", "torch-ref", "burn-floor"),
    ),
)
