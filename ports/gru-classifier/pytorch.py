"""The PyTorch original of the GRU classifier port: a character-level sequence classifier as users
write it, `Embedding(40, 32, padding_idx=0)` -> one-layer `GRU(32, 48, batch_first=True)` -> its final
state `h_n` -> `Dropout(0.3)` -> `Linear(48, 5)`, trained with AdamW and PyTorch's documented
`StepLR(step_size=30, gamma=0.1)` (dropout on) with cross-entropy on a batch of 8 sequences of 5 to
12 characters, padded with 0 at the end and not packed (the padding runs through the GRU;
`padding_idx` keeps its embedding row at zero and untrained), and recorded with `pita.torch.record`.

    python ports/gru-classifier/pytorch.py --out DIR                          # two steps, everything recorded
    python ports/gru-classifier/pytorch.py --out DIR --steps 100 --every 10 --no-dropout   # a light trace of 100 steps

Writes DIR/weights.safetensors (the initial state_dict), DIR/data.safetensors (`tokens`,
`targets`) and the recording DIR/torch-record.safetensors (with the float64 run beside it).
Everything comes from one fixed seed, so every run writes the same bytes.
"""

import argparse
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn

import pita.torch

SEED = 0
VOCAB, EMBED, HIDDEN, CLASSES = 40, 32, 48, 5
PAD = 0  # the padding token, at the end of the shorter sequences
BATCH, SEQ, MIN_LEN = 8, 12, 5
DROPOUT = 0.3
LR, STEPS = 1e-2, 2
# The learning-rate schedule of PyTorch's StepLR example: the rate falls tenfold after every 30 steps.
STEP_SIZE, GAMMA = 30, 0.1


class CharGru(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED, padding_idx=PAD)
        self.gru = nn.GRU(EMBED, HIDDEN, batch_first=True)
        self.drop = nn.Dropout(DROPOUT)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, tokens):
        _, h_n = self.gru(self.embed(tokens))  # h_n: [layers, batch, hidden], the state after the last step
        return self.head(self.drop(h_n[0]))


def build():
    """The model (training mode), its batch and targets, all from SEED."""
    torch.manual_seed(SEED)
    model = CharGru()
    lengths = torch.randint(MIN_LEN, SEQ + 1, (BATCH,))
    tokens = torch.randint(1, VOCAB, (BATCH, SEQ))
    tokens[torch.arange(SEQ) >= lengths[:, None]] = PAD
    targets = torch.randint(0, CLASSES, (BATCH,))
    # The plants need both: padding (an embedding row that must get no gradient) and a target of
    # class 0 (a loss told that 0 is padding drops it).
    assert (tokens == PAD).any() and (targets == 0).any(), "this seed's batch has no padding or no class-0 target"
    return model.train(), tokens, targets


def adamw_with_schedule(params):
    """AdamW (eps 1e-8, weight_decay 1e-2: PyTorch's defaults) whose StepLR steps after each
    `optimizer.step()`, as a training loop calls `scheduler.step()`: `record` calls only
    `optimizer.step()`, and builds the float64 run's optimizer from this factory too."""
    optimizer = torch.optim.AdamW(params, lr=LR)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=STEP_SIZE, gamma=GAMMA)
    optimizer.register_step_post_hook(lambda *_: scheduler.step())
    return optimizer


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the weights, the data and the recording")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"training steps (default {STEPS})")
    parser.add_argument("--every", type=int, help="a light trace: parameters every EVERY steps, loss and gradient norms every step")
    parser.add_argument("--no-dropout", action="store_true",
                        help="Dropout(p=0): a light trace records the dropout masks of step 1 only, so no port could replay a later step's")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    model, tokens, targets = build()
    if args.no_dropout:
        model.drop.p = 0.0  # after build: the weights and the batch come from the same draws either way
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, args.out / "weights.safetensors")
    save_file({"tokens": tokens, "targets": targets}, args.out / "data.safetensors")

    light = {} if args.every is None else {"every": args.every}
    path = pita.torch.record(model, tokens, targets, nn.CrossEntropyLoss(), args.out / "torch-record.safetensors", optimizer=adamw_with_schedule,
                             steps=args.steps, **light, experiment="port-gru-classifier", batch_size=BATCH)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
