//! p10h: PyTorch's pre-norm Transformer layers (`norm_first=True`) loaded into burn's name for
//! name. burn's TransformerEncoderLayer runs `norm_2` before the attention and `norm_1` before the
//! feed-forward (PyTorch: `norm1`, `norm2`); the decoder layer is rotated the same way (`norm_3`,
//! `norm_1`, `norm_2` against `norm1`, `norm2`, `norm3`); burn's TransformerEncoder has no final
//! norm. Every LayerNorm has the shape `[d_model]`, so the load reports nothing.
use std::path::Path;

use burn::module::Module;
use burn::nn::activation::ActivationConfig;
use burn::nn::attention::MhaInput;
use burn::nn::transformer::{
    TransformerDecoder, TransformerDecoderConfig, TransformerDecoderInput, TransformerEncoder,
    TransformerEncoderConfig, TransformerEncoderInput, TransformerEncoderLayer,
};
use burn::nn::{LayerNorm, LayerNormConfig, Linear};
use burn::store::burn_pack::Tensor as PackTensor;
use burn::store::{bridge, ApplyResult, ModuleSnapshot, ModuleStore, PyTorchToBurnAdapter, PytorchStore};
use burn::tensor::{Device, Tensor, TensorData};
use pita::dump::Dump;
use pita::record::{tap, Recorder};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{tensor, values};

const VARIANTS: [&str; 10] = [
    "port", "fixed", "equal-port", "post-port", "stack-port", "stack-fixed", "decoder-port", "decoder-fixed",
    "record-port", "record-fixed",
];
const D_MODEL: usize = 8;
const N_HEADS: usize = 2;
const D_FF: usize = 16;
const BATCH: usize = 2;
const SEQ: usize = 3;
const MEMORY_SEQ: usize = 4;

// book:begin names
/// PyTorch's submodules of one encoder layer, as burn names them (the attention's packed
/// `in_proj_*` is split below; PyTorchToBurnAdapter transposes Linear weights and renames a
/// LayerNorm's `weight`/`bias` to `gamma`/`beta`).
const ENCODER_MODULES: &[(&str, &str)] = &[("self_attn", "mha"), ("linear1", "pwff.linear_inner"), ("linear2", "pwff.linear_outer")];
/// Name for name: loads without a word, and is right for post-norm layers.
const ENCODER_NORMS: &[(&str, &str)] = &[("norm1", "norm_1"), ("norm2", "norm_2")];
// book:end
// book:begin prenorm_names
/// Pre-norm (`norm_first`): burn runs `norm_2` before the attention and `norm_1` before the
/// feed-forward, where PyTorch runs `norm1` and `norm2`.
const ENCODER_NORMS_PRENORM: &[(&str, &str)] = &[("norm1", "norm_2"), ("norm2", "norm_1")];
// book:end
const DECODER_MODULES: &[(&str, &str)] = &[
    ("self_attn", "self_attn"), ("multihead_attn", "cross_attn"), ("linear1", "pwff.linear_inner"), ("linear2", "pwff.linear_outer"),
];
// book:begin decoder_names
const DECODER_NORMS: &[(&str, &str)] = &[("norm1", "norm_1"), ("norm2", "norm_2"), ("norm3", "norm_3")];
/// Pre-norm decoder: burn runs `norm_3` before the self-attention, `norm_1` before the
/// cross-attention and `norm_2` before the feed-forward.
const DECODER_NORMS_PRENORM: &[(&str, &str)] = &[("norm1", "norm_3"), ("norm2", "norm_1"), ("norm3", "norm_2")];
// book:end

/// How one load renames: the layer's submodules, its norms, and where burn keeps the layers.
struct Names {
    modules: &'static [(&'static str, &'static str)],
    norms: &'static [(&'static str, &'static str)],
    layers_at: &'static str, // "" or "encoder." when the encoder sits inside a wrapper
}

impl Names {
    /// A PyTorch module path as burn's: `layers.N.<module>` → `<layers_at>layers.N.<burn module>`
    /// (an attention's `out_proj` → `output`); a path outside the layers (the final `norm`)
    /// stays as it is.
    fn burn_path(&self, torch_path: &str) -> String {
        let Some(rest) = torch_path.strip_prefix("layers.") else { return torch_path.to_string() };
        let (index, module) = rest.split_once('.').expect("layers.N.<module>");
        let module = match module.strip_suffix(".out_proj") {
            Some(attn) => format!("{}.output", self.burn_module(attn)),
            None => self.burn_module(module),
        };
        format!("{}layers.{index}.{module}", self.layers_at)
    }

    fn burn_module(&self, torch: &str) -> String {
        self.modules.iter().chain(self.norms).find(|(t, _)| *t == torch).map(|(_, b)| b.to_string())
            .unwrap_or_else(|| panic!("no burn name for PyTorch module {torch:?}"))
    }

    /// The PyTorch module whose weights a burn module of layer 0 holds (the trace's tap name).
    fn torch_module(&self, burn: &str) -> String {
        let torch = self.modules.iter().chain(self.norms).find(|(_, b)| *b == burn).map(|(t, _)| *t)
            .unwrap_or_else(|| panic!("no PyTorch name for burn module {burn:?}"));
        format!("layers.0.{torch}")
    }
}

// book:begin torch_to_burn
/// Every tensor of a torch.save'd state_dict under burn's name; an attention's packed
/// `in_proj_weight`/`in_proj_bias` split by rows into query, key and value (layouts stay
/// PyTorch's: PyTorchToBurnAdapter transposes while applying).
fn torch_to_burn(store: &mut PytorchStore, names: &Names) -> Vec<PackTensor> {
    let mut tensors = Vec::new();
    for (name, tensor) in store.get_all_tensors().expect("read the .pt file") {
        let data = pita_lab::compat::stored_tensor_data(tensor);
        let (path, param) = name.rsplit_once('.').expect("<module>.<param>");
        match param.strip_prefix("in_proj_") {
            Some(kind) => {
                let attn = names.burn_path(path);
                let (mut shape, values) = (data.shape().to_vec(), data.try_to_vec::<f32>().expect("f32"));
                shape[0] /= 3; // rows 0..E query, E..2E key, 2E..3E value
                let part = values.len() / 3;
                for (i, linear) in ["query", "key", "value"].iter().enumerate() {
                    let data = TensorData::new(values[i * part..(i + 1) * part].to_vec(), shape.clone());
                    tensors.push(bridge::from_data(data, format!("{attn}.{linear}.{kind}"), None));
                }
            }
            None => tensors.push(bridge::from_data(data, format!("{}.{param}", names.burn_path(path)), None)),
        }
    }
    tensors
}

/// Reads a torch.save'd state_dict and applies it to `model` under burn's names.
fn load<M: ModuleSnapshot>(model: &mut M, file: &Path, names: &Names) -> ApplyResult {
    let mut store = PytorchStore::from_file(file);
    let tensors = torch_to_burn(&mut store, names);
    model.apply(tensors, None, Some(Box::new(PyTorchToBurnAdapter)), false)
}
// book:end

// book:begin config
fn encoder_config(n_layers: usize, norm_first: bool) -> TransformerEncoderConfig {
    TransformerEncoderConfig::new(D_MODEL, D_FF, N_HEADS, n_layers)
        .with_dropout(0.0)
        .with_norm_first(norm_first)
        .with_activation(ActivationConfig::Relu) // PyTorch's default (p09)
}
// book:end

// book:begin final_norm
/// `nn.TransformerEncoder(..., norm=LayerNorm)`: burn's encoder plus the final LayerNorm
/// that burn's TransformerEncoder does not have.
#[derive(Module, Debug)]
struct EncoderWithNorm {
    encoder: TransformerEncoder,
    norm: LayerNorm,
}

impl EncoderWithNorm {
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.norm.forward(self.encoder.forward(TransformerEncoderInput::new(x)))
    }
}
// book:end

// book:begin traced
/// burn 0.22.1's `TransformerEncoderLayer::forward` with `norm_first = true` (encoder.rs),
/// copied from its public fields with a tap after every submodule: burn's own layer has no
/// place for one. Each tap is named by the PyTorch module the weights came from (`names`).
fn traced_prenorm_layer(layer: &TransformerEncoderLayer, x: Tensor<3>, names: &Names) -> Tensor<3> {
    let h = layer.norm_2.forward(x.clone());
    tap(&names.torch_module("norm_2"), &h);
    let h = layer.mha.forward(MhaInput::self_attn(h)).context;
    tap(&names.torch_module("mha"), &h);
    let h = layer.dropout.forward(h);
    tap("layers.0.dropout1", &h);
    let x = x + h;
    let h = layer.norm_1.forward(x.clone());
    tap(&names.torch_module("norm_1"), &h);
    let h = layer.pwff.linear_inner.forward(h);
    tap(&names.torch_module("pwff.linear_inner"), &h);
    let h = layer.pwff.dropout.forward(layer.pwff.activation.forward(h));
    tap("layers.0.dropout", &h);
    let h = layer.pwff.linear_outer.forward(h);
    tap(&names.torch_module("pwff.linear_outer"), &h);
    let h = layer.dropout.forward(h);
    tap("layers.0.dropout2", &h);
    let x = x + h;
    tap("layers.0", &x);
    x
}
// book:end

/// Layer 0's parameters as burn holds them, under PyTorch's names and layouts (the load run
/// backwards: query/key/value packed into `in_proj_*`, Linear weights `[out, in]`, each norm
/// under the PyTorch name it was loaded from), so the trace compares the parameters too.
fn torch_params(dump: &mut Dump, layer: &TransformerEncoderLayer, names: &Names) -> Result<(), pita::Error> {
    let weight = |linear: &Linear| linear.weight.val().transpose(); // burn [in, out] → [out, in]
    let bias = |linear: &Linear| linear.bias.as_ref().expect("a bias").val();
    let qkv = [&layer.mha.query, &layer.mha.key, &layer.mha.value];
    dump.tensor("param/layers.0.self_attn.in_proj_weight", Tensor::cat(qkv.iter().map(|l| weight(l)).collect(), 0))?
        .tensor("param/layers.0.self_attn.in_proj_bias", Tensor::cat(qkv.iter().map(|l| bias(l)).collect(), 0))?;
    let linears = [("self_attn.out_proj", &layer.mha.output), ("linear1", &layer.pwff.linear_inner), ("linear2", &layer.pwff.linear_outer)];
    for (torch, linear) in linears {
        dump.tensor(&format!("param/layers.0.{torch}.weight"), weight(linear))?
            .tensor(&format!("param/layers.0.{torch}.bias"), bias(linear))?;
    }
    for (torch, burn) in names.norms {
        let norm = match *burn {
            "norm_1" => &layer.norm_1,
            "norm_2" => &layer.norm_2,
            other => unreachable!("an encoder layer has no {other}"),
        };
        dump.tensor(&format!("param/layers.0.{torch}.weight"), norm.gamma.val())?
            .tensor(&format!("param/layers.0.{torch}.bias"), norm.beta.as_ref().expect("a bias").val())?;
    }
    Ok(())
}

fn report(result: &ApplyResult) -> String {
    let missing: Vec<&str> = result.missing.iter().map(|(p, _)| p.as_str()).collect();
    format!("applied {}, missing {:?}, unused {:?}, errors {}", result.applied.len(), missing, result.unused, result.errors.len())
}

fn encoder_names(norms: &'static [(&'static str, &'static str)], layers_at: &'static str) -> Names {
    Names { modules: ENCODER_MODULES, norms, layers_at }
}

/// The output of one variant, and its load report.
fn run(variant: &str, dir: &Path, x: Tensor<3>, memory: Tensor<3>, device: &Device) -> (Tensor<3>, ApplyResult) {
    let encode = |file: &str, config: TransformerEncoderConfig, norms| {
        let mut encoder = config.init(device);
        let result = load(&mut encoder, &dir.join(file), &encoder_names(norms, ""));
        (encoder.forward(TransformerEncoderInput::new(x.clone())), result)
    };
    match variant {
        "port" => {
            // book:begin port
            let mut encoder = encoder_config(1, true).init(device);
            let result = load(&mut encoder, &dir.join("ref.pt"), &encoder_names(ENCODER_NORMS, ""));
            // book:end
            (encoder.forward(TransformerEncoderInput::new(x)), result)
        }
        "fixed" => {
            // book:begin fixed
            let mut encoder = encoder_config(1, true).init(device);
            let result = load(&mut encoder, &dir.join("ref.pt"), &encoder_names(ENCODER_NORMS_PRENORM, ""));
            // book:end
            (encoder.forward(TransformerEncoderInput::new(x)), result)
        }
        "equal-port" => encode("equal.pt", encoder_config(1, true), ENCODER_NORMS),
        "post-port" => encode("post.pt", encoder_config(1, false), ENCODER_NORMS),
        "stack-port" => encode("stack.pt", encoder_config(2, true), ENCODER_NORMS_PRENORM),
        "stack-fixed" => {
            // book:begin stack_fixed
            let mut net = EncoderWithNorm { encoder: encoder_config(2, true).init(device), norm: LayerNormConfig::new(D_MODEL).init(device) };
            let result = load(&mut net, &dir.join("stack.pt"), &encoder_names(ENCODER_NORMS_PRENORM, "encoder."));
            // book:end
            (net.forward(x), result)
        }
        "decoder-port" | "decoder-fixed" => {
            let norms = if variant == "decoder-port" { DECODER_NORMS } else { DECODER_NORMS_PRENORM };
            let config = TransformerDecoderConfig::new(D_MODEL, D_FF, N_HEADS, 1)
                .with_dropout(0.0).with_norm_first(true).with_activation(ActivationConfig::Relu);
            let mut decoder: TransformerDecoder = config.init(device);
            let result = load(&mut decoder, &dir.join("decoder.pt"), &Names { modules: DECODER_MODULES, norms, layers_at: "" });
            (decoder.forward(TransformerDecoderInput::new(x, memory)), result)
        }
        _ => unreachable!("the record variants are run by `record`"),
    }
}

/// `record-port` / `record-fixed`: the forward pass recorded tap by tap for `pita trace`, after
/// checking that the tapped copy computes what burn's own layer does.
fn record(variant: &str, dir: &Path, x: Tensor<3>, device: &Device, input_sha256: &str) -> Result<(), pita::Error> {
    let norms = if variant == "record-port" { ENCODER_NORMS } else { ENCODER_NORMS_PRENORM };
    let names = encoder_names(norms, "");
    let mut encoder = encoder_config(1, true).init(device);
    println!("load: {}", report(&load(&mut encoder, &dir.join("record.pt"), &names)));
    let own = encoder.forward(TransformerEncoderInput::new(x.clone()));
    // book:begin record
    let mut recorder = Recorder::new();
    let traced = {
        let _listening = recorder.listen();
        traced_prenorm_layer(&encoder.layers[0], x, &names)
    };
    // book:end
    let same = values(traced) == values(own);
    println!("the tapped copy equals TransformerEncoder::forward: {same}");
    assert!(same, "the tapped copy of the layer no longer computes what burn's layer does");
    println!("execution_order {:?}", recorder.execution_order());
    let mut dump = recorder.into_dump(dump_builder("p10h", variant, input_sha256, device))?;
    torch_params(&mut dump, &encoder.layers[0], &names)?;
    dump.write(dir)?;
    Ok(())
}

/// `pytorch.py`'s `pattern`: n values of `ramp(11)`, stepping by 7 (mod 11) from `start`.
fn pattern(n: usize, start: usize) -> Vec<f32> {
    let base = ramp(11, 0);
    (0..n).map(|k| base[(7 * k + start) % base.len()]).collect()
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&VARIANTS);
    let device = Device::flex(); // inference only: no autodiff, so dropout (0 anyway) is off
    // not a plain ramp: every row of a ramp normalises to the same vector, and its large mean
    // against a small spread makes LayerNorm's float32 result depend on the summation order
    let x_values: Vec<f32> = pattern(BATCH * SEQ * D_MODEL, 4).iter().map(|v| v / 2.0).collect();
    let memory_values: Vec<f32> = pattern(BATCH * MEMORY_SEQ * D_MODEL, 2).iter().map(|v| v / 2.0).collect();
    // PyTorch derives every parameter from ramp(11) too; burn reads them from its .pt files
    let input_sha256 = inputs_sha256(&[&x_values, &memory_values, &ramp(11, 0)]);
    let x = tensor(&x_values, [BATCH, SEQ, D_MODEL], &device);
    let memory = tensor(&memory_values, [BATCH, MEMORY_SEQ, D_MODEL], &device);
    if args.variant.starts_with("record-") {
        return record(&args.variant, &args.out, x, &device, &input_sha256);
    }
    let (y, result) = run(&args.variant, &args.out, x, memory, &device);
    println!("load: {}", report(&result));
    println!("y[0, 0] {:?}", values(y.clone().slice([0..1, 0..1])));

    let mut dump = dump_builder("p10h", &args.variant, &input_sha256, &device)
        .metadata("applied", result.applied.join(","))
        .metadata("missing", result.missing.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(","))
        .metadata("unused", result.unused.join(","))
        .build()?;
    dump.tensor("y", y)?;
    dump.write(&args.out)?;
    Ok(())
}
