"""Guide 「怎么读这一卷」: how an experiment is built and read. Its examples run like an
experiment's: bit-identical inputs and their hash, compare refusing other inputs, why floats
differ by a few ULPs (summation order, where the 1/B is applied, FMA), and compare's exit codes."""

from dataclasses import dataclass

import numpy as np

from pita.dump import read_dump
from pita.stats import ulp_distance
from pita_lab.claims import Claim, last_line
from pita_lab.experiment import Accepts, Diagnosed, Experiment, Matches, Mismatches, Relates
from pita_lab.inputs import inputs_sha256

# The explicit float32 arithmetic both sides run in the `orders` variant, by topic.
ORDER = ("sum.forward", "sum.reverse", "sum.pairwise", "sum.f64")
PLACEMENT = ("mean.sum_times_inv", "mean.each_times_inv", "mean.sum_div")
FMA = ("fma.fused", "fma.unfused")


@dataclass(frozen=True)
class HashIsTheInputs(Claim):
    """Both dumps record the same `input_sha256`, and it is the sha256 of the input `tensor`
    each dump holds (recomputed here from the dumped bytes)."""

    id: str
    text: str
    dumps: tuple[str, ...]
    tensor: str

    def observe(self, record, out):
        found = {name: read_dump(out / f"{name}.safetensors") for name in self.dumps}
        recorded = {name: dump.metadata["input_sha256"] for name, dump in found.items()}
        recomputed = {name: inputs_sha256(dump.tensors[self.tensor]) for name, dump in found.items()}
        ok = len(set(recorded.values())) == 1 and recorded == recomputed
        observed = "; ".join(f"{name}: {recorded[name][:16]}… ({'=' if recorded[name] == recomputed[name] else '≠'} sha256({self.tensor}))"
                             for name in self.dumps)
        return f"the same input_sha256 in {', '.join(self.dumps)}, = sha256({self.tensor})", observed, ok


@dataclass(frozen=True)
class Refused(Claim):
    """A program that ran `pita compare` on dumps of different inputs ended as compare did:
    exit 2, one line on stderr that names the input hashes."""

    id: str
    text: str
    side: str
    variant: str

    def observe(self, record, out):
        run = record.program(self.side, self.variant)
        lines = [line for line in run.stderr.splitlines() if line.strip()]
        ok = run.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: input hashes differ")
        return "exit 2, one line: error: input hashes differ …", f"exit {run.exit_code}, {len(lines)} line(s): {last_line(run.stderr)[:60]}…", ok


@dataclass(frozen=True)
class SameBits(Claim):
    """Each of `tensors` is bit for bit the same in dumps `reference` and `candidate`: both sides
    ran the same correctly rounded IEEE operations in the same order."""

    id: str
    text: str
    reference: str
    candidate: str
    tensors: tuple[str, ...]

    def observe(self, record, out):
        reference = read_dump(out / f"{self.reference}.safetensors").tensors
        candidate = read_dump(out / f"{self.candidate}.safetensors").tensors
        differing = {name: int(np.count_nonzero(reference[name].view(np.uint32) != candidate[name].view(np.uint32)))
                     for name in self.tensors}
        observed = ", ".join(f"{name}: {count} differing" for name, count in differing.items())
        return f"{', '.join(self.tensors)}: every bit equal", observed, not any(differing.values())


@dataclass(frozen=True)
class UlpsApart(Claim):
    """In dump `dump`, tensors `first` and `second` differ by at least one ULP somewhere
    (`apart=True`) or are bit for bit equal (`apart=False`); the ULP distances are measured."""

    id: str
    text: str
    dump: str
    first: str
    second: str
    apart: bool = True

    def observe(self, record, out):
        tensors = read_dump(out / f"{self.dump}.safetensors").tensors
        distance = ulp_distance(tensors[self.first], tensors[self.second])
        worst = int(distance.max(initial=0))
        where = f" at index {int(distance.argmax())}" if distance.size > 1 and worst else ""
        expected = f"{self.first} and {self.second}: " + ("at least 1 ulp apart" if self.apart else "0 ulp apart")
        return expected, f"at most {worst} ulp apart{where}", (worst >= 1) == self.apart


EXPERIMENT = Experiment(
    id="reading",
    title="怎么读这一卷",
    mainline="",  # a guide sits before the main line
    kind="guide",
    torch_variants=("ramp", "orders", "refuse"),
    burn_variants=("ramp", "forgot-mean", "orders"),
    comparisons=(("torch-ramp", "burn-ramp"), ("torch-ramp", "burn-forgot-mean"), ("torch-orders", "burn-orders")),
    sources=(),
    claims=(
        Accepts("torch-ramp-runs", "PyTorch 侧写出斜坡输入和它的 sum、mean", "torch", "ramp"),
        Accepts("burn-ramp-runs", "burn 侧写出斜坡输入和它的 sum、mean", "burn", "ramp"),
        Relates("inputs-bit-identical", "两边的输入 `x` 逐位相同", "torch-ramp", "burn-ramp", "x", "identity"),
        HashIsTheInputs("hash-is-the-inputs", "两边的 dump 记下同一个 `input_sha256`，它就是输入字节的 sha256",
                        ("torch-ramp", "burn-ramp"), "x"),
        Refused("compare-refuses-other-inputs", "输入哈希不同的两个 dump，`pita compare` 拒绝比较：退出码 2、一行报错",
                "torch", "refuse"),
        Matches("library-reductions-match", "两边框架自己的 sum、mean 在默认容差下一致（退出码 0）", "torch-ramp", "burn-ramp"),
        Mismatches("negative-control", "忘了 1/B 的 mean 对 PyTorch 报 MISMATCH（退出码 1）", "torch-ramp", "burn-forgot-mean"),
        Diagnosed("diagnosis-names-the-batch", "compare 诊断出 scale，倍数就是 dump 里记的 batch 大小",
                  "torch-ramp", "burn-forgot-mean", "scale", "batch_size"),
        Matches("orders-match", "手写的求和、mean、FMA 两边在默认容差下一致", "torch-orders", "burn-orders"),
        SameBits("same-order-same-bits", "同样的 f32 加法按同样的顺序做，两边逐位相同", "torch-orders", "burn-orders", ORDER),
        UlpsApart("order-changes-the-sum", "同样 12 个数，从前往后加和从后往前加，结果不同", "torch-orders",
                  "sum.forward", "sum.reverse"),
        UlpsApart("tree-changes-the-sum", "两两成对的树形求和，又是另一个结果", "torch-orders", "sum.forward", "sum.pairwise"),
        SameBits("same-placement-same-bits", "1/B 乘在同一处，两边逐位相同", "torch-orders", "burn-orders", PLACEMENT),
        UlpsApart("placement-changes-the-mean", "B = 12：先求和再乘 1/B，和每项先乘 1/B 再求和，结果不同", "torch-orders",
                  "mean.sum_times_inv", "mean.each_times_inv"),
        UlpsApart("power-of-two-placement-exact", "B = 4：1/4 是 2 的幂，乘在哪一步结果都逐位相同", "torch-orders",
                  "mean4.sum_times_inv", "mean4.each_times_inv", apart=False),
        SameBits("fma-same-bits", "融合乘加（一次舍入）和分开的乘、加（两次舍入），两边各自逐位相同",
                 "torch-orders", "burn-orders", FMA),
        UlpsApart("fma-changes-the-result", "a·b+c 融合与不融合，至少一个元素不同", "torch-orders", "fma.fused", "fma.unfused"),
    ),
)
