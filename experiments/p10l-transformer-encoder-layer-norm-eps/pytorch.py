"""p10l, PyTorch side: a BERT encoder (transformers' BertEncoder, its BertConfig defaults but the
sizes) on exact weights; its LayerNorms take `BertConfig().layer_norm_eps`. Recorded with
pita.torch's Recorder (parameters, module settings, the last layer's output) for compare and trace."""

import torch
from transformers import BertConfig
from transformers.models.bert.modeling_bert import BertEncoder

import pita.torch
from pita_lab.args import experiment_args
from pita_lab.inputs import inputs_sha256, ramp

# book:begin setup
D_MODEL, D_FF, N_HEADS, N_LAYERS = 8, 16, 2, 2
BATCH, SEQ = 2, 3
# book:end


def pattern(n: int, salt: int) -> list[float]:
    """n exact weights in [-0.5, 0.5] (multiples of 1/16), different for each `salt`."""
    return [((k * 7 + salt) % 17) * 0.0625 - 0.5 for k in range(n)]


# Each layer's linears in the order both sides fill them: (PyTorch name, out, in).
LINEARS = (("attention.self.query", D_MODEL, D_MODEL), ("attention.self.key", D_MODEL, D_MODEL),
           ("attention.self.value", D_MODEL, D_MODEL), ("attention.output.dense", D_MODEL, D_MODEL),
           ("intermediate.dense", D_FF, D_MODEL), ("output.dense", D_MODEL, D_FF))


def weights() -> list[tuple[str, list[float], list[float]]]:
    """(name, weight in PyTorch's [out, in] layout, bias) of every linear, layer by layer."""
    found = []
    for layer in range(N_LAYERS):
        for index, (name, n_out, n_in) in enumerate(LINEARS):
            salt = 2 * (layer * len(LINEARS) + index)
            found.append((f"layer.{layer}.{name}", pattern(n_out * n_in, salt), pattern(n_out, salt + 1)))
    return found


def main():
    args = experiment_args(("ref",))
    inputs = ramp(BATCH * SEQ * D_MODEL)
    linears = weights()
    input_sha256 = inputs_sha256(inputs, *(values for _, weight, bias in linears for values in (weight, bias)))
    # book:begin ref
    config = BertConfig(hidden_size=D_MODEL, intermediate_size=D_FF, num_attention_heads=N_HEADS, num_hidden_layers=N_LAYERS,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)  # layer_norm_eps: BertConfig's default
    config._attn_implementation = "eager"
    encoder = BertEncoder(config).eval()
    # book:end
    parameters = dict(encoder.named_parameters())
    with torch.no_grad():
        for name, weight, bias in linears:
            parameters[f"{name}.weight"].copy_(torch.tensor(weight).reshape(parameters[f"{name}.weight"].shape))
            parameters[f"{name}.bias"].copy_(torch.tensor(bias))
    x = torch.from_numpy(inputs).reshape(BATCH, SEQ, D_MODEL)
    last = f"layer.{N_LAYERS - 1}.output.LayerNorm"  # the encoder's output
    with torch.no_grad(), pita.torch.Recorder(encoder, include=[last]) as recorder:  # every module's settings, that output
        recorder.params()
        out = encoder(x).last_hidden_state
    recorder.write(args.out / f"torch-{args.variant}.safetensors", experiment="p10l", variant=args.variant,
                   input_sha256=input_sha256, layer_norm_eps=repr(config.layer_norm_eps))
    norms = {name: module.eps for name, module in encoder.named_modules() if isinstance(module, torch.nn.LayerNorm)}
    print("BertConfig().layer_norm_eps", BertConfig().layer_norm_eps)
    print("LayerNorm eps", norms)
    print("out[0, 0]", out[0, 0].tolist())


if __name__ == "__main__":
    main()
