"""p10j: burn's convolutions pad with zeros only (no `padding_mode`). A PyTorch Conv2d with
`padding_mode='reflect'` ported without it is zero-padded: the output differs at the border only.
Padding the input with `Tensor::pad` (Reflect, Edge; circular by hand) and a Valid conv matches."""

import re
from dataclasses import dataclass

import numpy as np

from pita_lab.experiment import Accepts, Claim, Experiment, Mapped, Matches, Mismatches, PairClaim, SourceRef


@dataclass(frozen=True)
class DiffersOnlyAtBorder(PairClaim):
    """In `pita compare`, `tensor` ([..., height, width]) fails the tolerance at every element
    within `padding` (the reference dump's metadata) of an edge and passes everywhere else."""

    tensor: str

    def observe(self, record, out):
        reference, candidate = self.dumps(out)
        padding = int(reference.metadata["padding"])
        tolerance = record.comparison(self.reference, self.candidate).result.tolerance
        ref = reference.tensors[self.tensor].astype(np.float64)
        passes = np.abs(candidate.tensors[self.tensor] - ref) <= tolerance.atol + tolerance.rtol * np.abs(ref)
        height, width = ref.shape[-2:]
        rows, cols = np.arange(height)[:, None], np.arange(width)[None, :]
        inner = (rows >= padding) & (rows < height - padding) & (cols >= padding) & (cols < width - padding)
        inner = np.broadcast_to(inner, ref.shape)
        observed = (f"interior {int(passes[inner].sum())} of {int(inner.sum())} pass; "
                    f"border (width {padding}) {int((~passes[~inner]).sum())} of {int((~inner).sum())} fail")
        return f"interior passes, border (width {padding}) fails", observed, bool(np.array_equal(passes, inner))


@dataclass(frozen=True)
class LacksMember(Claim):
    """The struct or enum whose definition line contains `block`, in the locked source of
    `crate`, has no field or variant whose name contains any of `names` (case-insensitive).
    Read at run time: a burn that adds one fails the claim."""

    id: str
    text: str
    crate: str
    file: str
    block: str
    names: tuple[str, ...]

    def observe(self, record, out):
        from pita_lab import repo_root
        from pita_lab.rust_source import locked_file

        version, source = locked_file(repo_root(), self.crate, self.file)
        members = block_members(source, self.block)
        found = [m for m in members if any(name in m.lower() for name in self.names)]
        expected = f"{self.crate} {version} `{self.block}`: no member like {', '.join(self.names)}"
        return expected, f"members {', '.join(members)}", bool(members) and not found


def block_members(source: str, block: str) -> list[str]:
    """The field or variant names of the one struct/enum whose line contains `block`: the first
    word (after `pub`) of each comma-separated item at the block's top level."""
    code = re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"', "", source, flags=re.DOTALL)  # comments, strings
    starts = [m.start() for m in re.finditer(re.escape(block), code)]
    if len(starts) != 1:
        raise ValueError(f"{len(starts)} definitions contain {block!r}")
    top, depth, nested = [], 0, 0
    for char in code[code.index("{", starts[0]):]:
        if char == "{":
            depth += 1
            if depth == 1:
                continue
        elif char == "}":
            depth -= 1
            if depth == 0:
                break
        if char in "([<" and depth == 1:
            nested += 1
        elif char in ")]>" and depth == 1:
            nested -= 1
        elif depth == 1 and nested == 0:
            top.append(char)
    items = ("".join(top)).split(",")
    words = [[w for w in re.findall(r"[A-Za-z_]\w*", item) if w != "pub"] for item in items]
    return [w[0] for w in words if w]


def magnitude(record) -> str:
    row = record.comparison("torch-reflect", "burn-port").tensors[0]
    return f"边上 {row.mismatched}/{row.n} 个元素差到 {row.max_abs_diff:.2g}，内部一致"


EXPERIMENT = Experiment(
    id="p10j",
    title="卷积没有 padding_mode：'reflect' 搬过来变成补零，只有边上不同",
    mainline="forward",
    kind="silent",
    symptoms=("forward-wrong",),
    related=("p10d", "p10"),
    settings=(
        Mapped("Conv1d.padding_mode", "Conv1d.", "zeros", "zeros"),
        Mapped("Conv2d.padding_mode", "Conv2d.", "zeros", "zeros"),
        Mapped("Conv3d.padding_mode", "Conv3d.", "zeros", "zeros"),
    ),
    torch_variants=("reflect", "replicate", "circular"),
    burn_variants=("port", "reflect", "edge", "circular"),
    comparisons=(("torch-reflect", "burn-port"), ("torch-reflect", "burn-reflect"), ("torch-replicate", "burn-edge"),
                 ("torch-replicate", "burn-reflect"), ("torch-circular", "burn-circular")),
    sources=(
        SourceRef("burn-nn", "src/modules/conv/conv2d.rs", "Conv2dConfig", "pub padding: PaddingConfig2d,"),
        SourceRef("burn-nn", "src/padding.rs", "PaddingConfig2d", "Explicit(usize, usize, usize, usize),"),
        SourceRef("burn-nn", "src/modules/conv/conv2d.rs", "Conv2d::forward", "let options = ConvOptions::new_with_padding("),
        SourceRef("burn-std", "src/ops.rs", "ConvOptions", "pub padding: [(usize, usize); N],"),
        SourceRef("burn-tensor", "src/tensor/api/pad.rs", "pad", "pub fn pad(self, padding: impl IntoPadding<D>, mode: impl Into<PadMode>) -> Self {"),
        SourceRef("burn-std", "src/ops.rs", "PadMode", "Reflect,"),
        SourceRef("burn-backend", "src/backend/ops/pad.rs", "validate_padding", '"Reflect padding must be less than dimension size"'),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 的 `Conv2d(padding=1, padding_mode='reflect')` 正常运行", "torch", "reflect"),
        LacksMember("no-padding-mode", "burn 的 `Conv2dConfig` 没有 `padding_mode` 这类字段，padding 只给大小",
                    "burn-nn", "src/modules/conv/conv2d.rs", "pub struct Conv2dConfig", ("padding_mode", "mode")),
        Accepts("burn-port-runs", "burn 照搬成 `PaddingConfig2d::Explicit(1, 1, 1, 1)`，不报错", "burn", "port"),
        Mismatches("negative-control", "照搬的 burn-port 对 torch-reflect 报 MISMATCH", "torch-reflect", "burn-port"),
        DiffersOnlyAtBorder("border-only", "差别只在边上：离边 padding 以内的输出全都不同，内部全都一致",
                            "torch-reflect", "burn-port", "out"),
        Matches("fix-matches", "先 `pad(…, PadMode::Reflect)` 再用 Valid 卷积，burn-reflect 和 torch-reflect 一致",
                "torch-reflect", "burn-reflect"),
        Matches("replicate-is-edge", "PyTorch 的 `'replicate'` 对应 `PadMode::Edge`：burn-edge 和 torch-replicate 一致",
                "torch-replicate", "burn-edge"),
        Mismatches("reflect-is-not-replicate", "`Reflect` 不是 `'replicate'`：burn-reflect 对 torch-replicate 报 MISMATCH",
                   "torch-replicate", "burn-reflect"),
        DiffersOnlyAtBorder("wrong-mode-border-only", "用错模式（`'replicate'` 配 `Reflect`）也只错在边上一圈",
                            "torch-replicate", "burn-reflect", "out"),
        LacksMember("no-circular-mode", "burn 的 `PadMode` 没有 circular（或 wrap）模式",
                    "burn-std", "src/ops.rs", "pub enum PadMode", ("circular", "wrap")),
        Matches("circular-by-hand", "`'circular'` 用切片加拼接补（`pita::pad_mode::pad_like_torch`），和 PyTorch 一致",
                "torch-circular", "burn-circular"),
    ),
)
