"""p25a: dropout across frameworks. The same seed gives other masks in PyTorch and burn (their
generators differ), each side repeats its own; replaying PyTorch's recorded masks aligns them."""

from dataclasses import dataclass

import numpy as np

from pita.likely import Signature
from pita_lab.experiment import Accepts, Experiment, Matches, Mismatches, PairClaim, SourceRef, Traced

DROPPED = "act/drop"  # the dropout's output: an element dropout zeroed is 0


@dataclass(frozen=True)
class KeepPatterns(PairClaim):
    """Both dumps' `tensor` has zeros (dropout applied), and the elements kept (non-zero) are the
    same positions (`same=True`) or not (`same=False`)."""

    tensor: str = DROPPED
    same: bool = True

    def observe(self, record, out):
        found = self.facts(record, out)
        applied = found["zeroed_reference"] > 0 and found["zeroed_candidate"] > 0
        expected = "dropout applied on both sides, " + ("the same kept positions" if self.same else "other kept positions")
        observed = f"{found['zeroed_reference']} and {found['zeroed_candidate']} of {found['size']} zeroed; kept positions differ at {found['differ']}"
        return expected, observed, applied and (found["differ"] == 0) == self.same

    def facts(self, record, out):
        """The counts: elements zeroed on each side, of `size`, and positions kept on one side only
        (seeded generators draw the same on every machine)."""
        ref, cand = (dump.tensors[self.tensor] != 0 for dump in self.dumps(out))
        return {"zeroed_reference": int((~ref).sum()), "zeroed_candidate": int((~cand).sum()), "size": int(ref.size),
                "differ": int(np.sum(ref != cand))}


def magnitude(record) -> str:
    found = next(c for c in record.claims if c.id == "seeds-differ").facts
    return f"同一个种子，{found['size']} 个元素里 {found['differ']} 个的去留不同"


EXPERIMENT = Experiment(
    id="p25a",
    title="dropout 掩码对不齐：同一个种子，两边丢的不是同一批元素",
    fix="用 `pita::replay::dropout` 重放 PyTorch 记录的 dropout 掩码（`Replay::from_file`，每步 `replay.step(k)`）；"
        "只比前向时用 eval（burn 的 `model.valid()`）",
    mainline="train/eval",
    kind="silent",
    symptoms=("forward-wrong", "slow-drift"),
    related=("p25", "p28", "port-gpt2"),
    # Random masks not replayed: trace sees that the reference recorded its masks and the candidate drew its own.
    signature=(Signature("masks"),),
    torch_variants=("seeded", "again", "eval"),
    burn_variants=("seeded", "again", "replayed", "valid"),
    comparisons=(
        ("torch-seeded", "torch-again"),
        ("burn-seeded", "burn-again"),
        ("torch-seeded", "burn-seeded"),
        ("torch-seeded", "burn-replayed"),
        ("torch-eval", "burn-valid"),
    ),
    traces=(("torch-seeded", "burn-seeded"), ("torch-seeded", "burn-replayed")),
    sources=(
        SourceRef("burn-nn", "src/modules/dropout.rs", "Dropout::forward", "Distribution::Bernoulli(prob_keep)"),
        SourceRef("burn-flex", "src/backend.rs", "seed", "FlexRng::seed_from_u64(seed)"),
    ),
    magnitude=magnitude,
    claims=(
        Accepts("torch-runs", "PyTorch 训练模式下一步前向和反向，`pita.torch.Recorder` 记下 dropout 的掩码", "torch", "seeded"),
        Accepts("burn-port-runs", "burn 用同一个种子（`device.seed`）跑同一步，正常运行", "burn", "seeded"),
        Matches("torch-repeats", "PyTorch 自己：同一个种子再跑一次，结果一致", "torch-seeded", "torch-again"),
        KeepPatterns("torch-masks-repeat", "PyTorch 两次运行丢的是同一批元素", "torch-seeded", "torch-again"),
        Matches("burn-repeats", "burn 自己：同一个种子再跑一次，结果一致", "burn-seeded", "burn-again"),
        KeepPatterns("burn-masks-repeat", "burn 两次运行丢的是同一批元素", "burn-seeded", "burn-again"),
        Mismatches("negative-control", "同一个种子，burn-seeded 对 torch-seeded 报 MISMATCH", "torch-seeded", "burn-seeded"),
        KeepPatterns("seeds-differ", "同一个种子，两边丢的不是同一批元素", "torch-seeded", "burn-seeded", same=False),
        Traced("trace-names-masks", "trace：第一处分歧在 dropout 的输出，认出是随机掩码不同（参考记录了掩码，候选自己抽）",
               "torch-seeded", "burn-seeded", phase="forward", name=DROPPED, random_masks=True),
        Matches("fix-matches", "burn-replayed（`pita::replay` 重放 PyTorch 记录的掩码）和 torch-seeded 一致：前向、loss、梯度",
                "torch-seeded", "burn-replayed"),
        KeepPatterns("replay-same-masks", "重放后两边丢的是同一批元素", "torch-seeded", "burn-replayed"),
        Traced("trace-replayed-matches", "trace：重放掩码的一组每个阶段都一致", "torch-seeded", "burn-replayed"),
        Matches("eval-matches", "eval 模式（PyTorch 的 `model.eval()`，burn 的 `model.valid()`）没有掩码要对齐，两边一致",
                "torch-eval", "burn-valid"),
    ),
)
