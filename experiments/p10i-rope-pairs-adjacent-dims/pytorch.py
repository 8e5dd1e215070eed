"""p10i, PyTorch side: a LLaMA/Qwen-style attention with HF transformers' RoPE (`rotate_half`,
which rotates dimension i together with i + head_dim/2), written out here without transformers."""

import math

import numpy as np
import torch

from pita.torch_dump import write_torch_dump
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
HEADS, HEAD_DIM, SEQ = 2, 8, 4
D_MODEL = HEADS * HEAD_DIM
ROPE_THETA = 10000.0  # LlamaConfig / Qwen2Config rope_theta
# book:end


def spread(n: int, start: int) -> np.ndarray:
    """`ramp(n, start)` reordered by k·7 mod n, every other sign flipped, divided by 16: a weight
    without the ramp's straight-line structure. Exact in float32; the burn side builds the same."""
    k = np.arange(n)
    signs = np.where(k % 2 == 0, 1.0, -1.0).astype(np.float32)
    return (ramp(n, start)[(k * 7) % n] * signs / np.float32(16)).astype(np.float32)


def inputs():
    x = (ramp(SEQ * D_MODEL) / np.float32(4)).astype(np.float32)
    weights = {name: spread(D_MODEL * D_MODEL, 16 * i) for i, name in enumerate(("q", "k", "v"))}
    biases = {name: spread(D_MODEL, 3 + 5 * i) for i, name in enumerate(("q", "k", "v"))}
    return x, weights, biases


# book:begin rope
def rotate_half(x):
    """As transformers' modeling_llama.rotate_half: the two halves of the last axis."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(seq, dim, base):
    """As LlamaRotaryEmbedding: inv_freq = 1 / base^(2i/dim), each frequency used twice."""
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = torch.outer(torch.arange(seq).float(), inv_freq)  # [seq, dim/2]
    emb = torch.cat((freqs, freqs), dim=-1)  # [seq, dim]: frequency i at i and i + dim/2
    return emb.cos(), emb.sin()


def apply_rotary_pos_emb(x, cos, sin):
    return x * cos + rotate_half(x) * sin
# book:end


def linear(weight, bias):
    fc = torch.nn.Linear(D_MODEL, D_MODEL)
    with torch.no_grad():
        fc.weight.copy_(torch.from_numpy(weight).reshape(D_MODEL, D_MODEL))
        fc.bias.copy_(torch.from_numpy(bias))
    return fc


def heads(t):
    """[1, seq, d_model] -> [1, heads, seq, head_dim]."""
    return t.view(1, SEQ, HEADS, HEAD_DIM).transpose(1, 2)


def feature_rows(t):
    """[1, heads, seq, head_dim] -> [heads·head_dim, seq]: one row per projection output."""
    return t[0].permute(0, 2, 1).reshape(D_MODEL, SEQ)


def unit_vectors(cos, sin):
    """Each unit vector e_j of one head, rotated at every position: [seq, head_dim, head_dim]."""
    eye = torch.eye(HEAD_DIM).unsqueeze(1).expand(HEAD_DIM, SEQ, HEAD_DIM)  # [j, pos, :] = e_j
    return apply_rotary_pos_emb(eye, cos, sin).transpose(0, 1)


def main():
    args = experiment_args(("ref", "pairs", "rotated"))
    x_in, weights, biases = inputs()
    input_sha256 = inputs_sha256(x_in, *weights.values(), *biases.values())
    q_proj, k_proj, v_proj = (linear(weights[n], biases[n]) for n in ("q", "k", "v"))
    x = torch.from_numpy(x_in).reshape(1, SEQ, D_MODEL)
    cos, sin = rope_cos_sin(SEQ, HEAD_DIM, ROPE_THETA)
    with torch.no_grad():
        # book:begin attention
        q, k, v = heads(q_proj(x)), heads(k_proj(x)), heads(v_proj(x))
        q, k = apply_rotary_pos_emb(q, cos, sin), apply_rotary_pos_emb(k, cos, sin)
        scores = q @ k.transpose(-2, -1) / math.sqrt(HEAD_DIM)  # [1, heads, seq, seq]
        out = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(1, SEQ, D_MODEL)
        # book:end
        unit = unit_vectors(cos, sin)
    if args.variant == "pairs":
        # book:begin pairs
        rotated = unit[1]  # position 1: row j is e_j rotated
        for j in range(HEAD_DIM):
            print(f"e{j} ->", " ".join(f"{v:+.3f}" for v in rotated[j].tolist()))
        # book:end
        tensors = {"unit.rotated": unit}
    elif args.variant == "rotated":
        tensors = {"q.rot": feature_rows(q), "k.rot": feature_rows(k)}
        print("q.rot position 1, head 0:", [round(v, 4) for v in q[0, 0, 1].tolist()])
    else:
        print("scores head 0:")
        for row in scores[0, 0].tolist():
            print(" ", [round(v, 5) for v in row])
        print("out[0, 0, :4]", [round(v, 5) for v in out[0, 0, :4].tolist()])
        tensors = {"scores": scores, "out": out}
    write_torch_dump(args.out / f"torch-{args.variant}.safetensors", tensors, experiment="p10i",
                     variant=args.variant, input_sha256=input_sha256, heads=HEADS, head_dim=HEAD_DIM,
                     rope_theta=ROPE_THETA)


if __name__ == "__main__":
    main()
