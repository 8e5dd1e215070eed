"""The PyTorch original of the worked port: a pre-norm transformer encoder block with an embedding
and a classification head, trained for two Adam steps and recorded with `pita.torch.record`.

    python examples/port-encoder/pytorch.py --out DIR            # DIR/torch-record.safetensors

Both also write the two files the burn side reads: DIR/weights.safetensors (the initial
state_dict) and DIR/data.safetensors (the batch). Everything comes from one fixed seed, so every
run writes the same bytes.
"""

import argparse
import math
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn
from torch.nn import functional as F

import pita.torch

SEED = 0
VOCAB, D_MODEL, N_HEADS, CLASSES = 16, 8, 2, 8
BATCH, SEQ = 4, 6
LR, STEPS = 1e-2, 2


class Attention(nn.Module):
    """Multi-head self-attention written out with four Linears named as burn's
    `MultiHeadAttention` names them (query/key/value/output), where nn.MultiheadAttention packs
    q/k/v into one `in_proj_weight` that no adapter splits.

    The key projection has no bias: softmax is invariant to adding one constant to a row of
    scores, so a key bias gets a zero gradient in exact arithmetic and rounding noise in float32,
    which Adam divides by its own square root and turns into a step of up to `lr`, different on
    each side."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model, bias=False)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, d = x.shape
        heads = lambda y: y.reshape(b, t, self.n_heads, d // self.n_heads).transpose(1, 2)  # [b, h, t, d_k]
        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.n_heads)
        context = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        return self.output(context)


class Mlp(nn.Module):
    # Square (d -> d -> d), like every Linear here: loaded without burn's PyTorch adapter, a
    # square weight keeps its [out, in] layout silently, where a non-square one is a shape error.
    def __init__(self, d_model):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_model)
        self.gelu = nn.GELU()
        self.fc2 = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.fc2(self.gelu(self.fc1(x)))


class Block(nn.Module):
    """Pre-norm: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = Mlp(d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.block = Block(D_MODEL, N_HEADS)
        self.head = nn.Linear(D_MODEL, CLASSES)

    def forward(self, tokens):
        return self.head(self.block(self.embed(tokens)).mean(dim=1))  # mean-pool over the sequence


def build():
    """The model, its initial weights and the batch, all from SEED."""
    torch.manual_seed(SEED)
    model = Encoder()
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ))
    targets = torch.randint(0, CLASSES, (BATCH,))
    return model, tokens, targets


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the weights, the data and the recording")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    model, tokens, targets = build()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, args.out / "weights.safetensors")
    save_file({"tokens": tokens, "targets": targets}, args.out / "data.safetensors")

    optimizer = torch.optim.Adam(model.parameters(), lr=LR)  # eps=1e-8, PyTorch's default
    # batch_size lets trace explain a loss or gradient scaled by the batch size.
    metadata = {"experiment": "port-encoder", "batch_size": BATCH}
    # book:begin record
    path = pita.torch.record(model, tokens, targets, F.cross_entropy, args.out / "torch-record.safetensors", optimizer=optimizer, steps=STEPS, **metadata)
    # book:end
    print(f"wrote {path}")

if __name__ == "__main__":
    main()
