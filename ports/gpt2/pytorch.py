"""The PyTorch original of the GPT-2 port: transformers' `GPT2LMHeadModel` with a small random
config (2 layers, width 64, 4 heads, a vocabulary of 96), eager attention, dropout 0.1 on the
embeddings, the attention weights and the residuals, trained two AdamW steps as a language model
(next-token cross-entropy, the labels shifted as the model shifts them) on a batch of four
sequences of 16 tokens, and recorded with `pita.torch.record`.

    python ports/gpt2/pytorch.py --out DIR
    python ports/gpt2/pytorch.py --out DIR --size medium   # GPT-2 medium's shape (bench/large_port.py)

Writes DIR/weights.safetensors (the initial parameters; `lm_head.weight` is `transformer.wte.weight`,
tied, so it is written once, under the embedding's name), DIR/data.safetensors (`tokens`) and the
recording DIR/torch-record.safetensors (with the float64 run beside it). Everything comes from one
fixed seed, so every run writes the same bytes.
"""

import argparse
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch.nn import functional as F
from transformers import GPT2Config, GPT2LMHeadModel

import pita.torch

SEED = 0
# book:begin config
VOCAB, POSITIONS, WIDTH, LAYERS, HEADS = 96, 32, 64, 2, 4
DROPOUT = 0.1
BATCH, SEQ = 4, 16
LR, STEPS = 1e-3, 2
# book:end
# `--size medium`: GPT-2 medium's shape (24 layers, width 1024, 16 heads, its 50257-token vocabulary
# and 1024 positions: 355 M parameters) on one short sequence, for bench/large_port.py's memory figures;
# dropout off, as its recording is sharded and the port's pita::replay reads masks from one file only.
SIZES = {
    "tiny": {"vocab": VOCAB, "positions": POSITIONS, "width": WIDTH, "layers": LAYERS, "heads": HEADS, "batch": BATCH, "seq": SEQ,
             "dropout": DROPOUT},
    "medium": {"vocab": 50257, "positions": 1024, "width": 1024, "layers": 24, "heads": 16, "batch": 1, "seq": 32, "dropout": 0.0},
}


def build(size: str = "tiny"):
    """The model of `SIZES[size]` (training mode, eager attention: SDPA's own dropout cannot be
    recorded) and the batch, all from SEED."""
    shape = SIZES[size]
    torch.manual_seed(SEED)
    config = GPT2Config(vocab_size=shape["vocab"], n_positions=shape["positions"], n_embd=shape["width"], n_layer=shape["layers"],
                        n_head=shape["heads"], resid_pdrop=shape["dropout"], embd_pdrop=shape["dropout"], attn_pdrop=shape["dropout"],
                        bos_token_id=0, eos_token_id=0,
                        attn_implementation="eager")
    model = GPT2LMHeadModel(config)
    model.train()
    tokens = torch.randint(0, shape["vocab"], (shape["batch"], shape["seq"]))
    return model, tokens


def next_token_loss(output, tokens):
    """The language-model loss: position t predicts token t + 1 (what the model computes from
    `labels=tokens`), averaged over the batch's BATCH * (SEQ - 1) predictions."""
    logits = output.logits[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the weights, the data and the recording")
    parser.add_argument("--size", choices=SIZES, default="tiny", help="the model's shape (default tiny; medium: GPT-2 medium's, 355 M parameters)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    model, tokens = build(args.size)
    # book:begin weights
    # named_parameters() names the tied lm_head.weight once (save_file refuses two names for one tensor).
    save_file({name: p.detach().contiguous() for name, p in model.named_parameters()}, args.out / "weights.safetensors")
    save_file({"tokens": tokens}, args.out / "data.safetensors")
    # book:end

    # book:begin record
    def optimizer(params):  # a factory: the float64 run builds its own over its copy's parameters
        return torch.optim.AdamW(params, lr=LR)  # betas (0.9, 0.999), eps 1e-8, weight_decay 1e-2

    # float64=True: the float64 run trace judges noise by, at every size ("auto" skips medium's 11 GB on 24 GB)
    path = pita.torch.record(model, tokens, tokens, next_token_loss, args.out / "torch-record.safetensors", optimizer=optimizer, steps=STEPS,
                             float64=True, experiment="port-gpt2", batch_size=len(tokens))
    # book:end
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
