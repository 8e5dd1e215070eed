"""The PyTorch original of the GPT-2 port: transformers' `GPT2LMHeadModel` with a small random
config (2 layers, width 64, 4 heads, a vocabulary of 96), eager attention, dropout 0.1 on the
embeddings, the attention weights and the residuals, trained two AdamW steps as a language model
(next-token cross-entropy, the labels shifted as the model shifts them) on a batch of four
sequences of 16 tokens, and recorded with `pita.torch.record`.

    python ports/gpt2/pytorch.py --out DIR

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


def build():
    """The model (training mode, eager attention: SDPA's own dropout cannot be recorded) and the
    batch, all from SEED."""
    torch.manual_seed(SEED)
    config = GPT2Config(vocab_size=VOCAB, n_positions=POSITIONS, n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS,
                        resid_pdrop=DROPOUT, embd_pdrop=DROPOUT, attn_pdrop=DROPOUT, bos_token_id=0, eos_token_id=0,
                        attn_implementation="eager")
    model = GPT2LMHeadModel(config)
    model.train()
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ))
    return model, tokens


def next_token_loss(output, tokens):
    """The language-model loss: position t predicts token t + 1 (what the model computes from
    `labels=tokens`), averaged over the batch's BATCH * (SEQ - 1) predictions."""
    logits = output.logits[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the weights, the data and the recording")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    model, tokens = build()
    # book:begin weights
    # named_parameters() names the tied lm_head.weight once (save_file refuses two names for one tensor).
    save_file({name: p.detach().contiguous() for name, p in model.named_parameters()}, args.out / "weights.safetensors")
    save_file({"tokens": tokens}, args.out / "data.safetensors")
    # book:end

    # book:begin record
    def optimizer(params):  # a factory: the float64 run builds its own over its copy's parameters
        return torch.optim.AdamW(params, lr=LR)  # betas (0.9, 0.999), eps 1e-8, weight_decay 1e-2

    path = pita.torch.record(model, tokens, tokens, next_token_loss, args.out / "torch-record.safetensors", optimizer=optimizer, steps=STEPS,
                             experiment="port-gpt2", batch_size=BATCH)
    # book:end
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
