//! p10l: a BERT port builds its encoder with `TransformerEncoderConfig::new(..)` and never sets
//! `layer_norm_eps`: every LayerNorm runs at burn's default instead of BERT's
//! `layer_norm_eps=1e-12`. The outputs move by a few parts in a million. Recorded under BERT's
//! names (pita::record), so that `pita trace` sets each LayerNorm's epsilon against PyTorch's.
use burn::module::Param;
use burn::nn::transformer::{TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput};
use burn::nn::Linear;
use burn::tensor::Device;
use pita::record::{tap, Recorder};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const D_MODEL: usize = 8;
const D_FF: usize = 16;
const N_HEADS: usize = 2;
const N_LAYERS: usize = 2;
const BATCH: usize = 2;
const SEQ: usize = 3;
// book:end

/// n exact weights in [-0.5, 0.5] (multiples of 1/16), different for each `salt` (pytorch.py's `pattern`).
fn pattern(n: usize, salt: usize) -> Vec<f32> {
    (0..n).map(|k| ((k * 7 + salt) % 17) as f32 * 0.0625 - 0.5).collect()
}

/// Each layer's linears in the order both sides fill them: (out, in), PyTorch's layout.
const LINEARS: [(usize, usize); 6] = [(D_MODEL, D_MODEL), (D_MODEL, D_MODEL), (D_MODEL, D_MODEL), (D_MODEL, D_MODEL), (D_FF, D_MODEL), (D_MODEL, D_FF)];

/// (weight in PyTorch's [out, in] layout, bias, out, in) of every linear, layer by layer.
fn weights() -> Vec<(Vec<f32>, Vec<f32>, usize, usize)> {
    let mut found = Vec::new();
    for layer in 0..N_LAYERS {
        for (index, &(n_out, n_in)) in LINEARS.iter().enumerate() {
            let salt = 2 * (layer * LINEARS.len() + index);
            found.push((pattern(n_out * n_in, salt), pattern(n_out, salt + 1), n_out, n_in));
        }
    }
    found
}

fn linear(weight: &[f32], bias: &[f32], n_out: usize, n_in: usize, device: &Device) -> Linear {
    // PyTorch's [out, in] weight, transposed into burn's [in, out].
    Linear {
        weight: Param::from_tensor(tensor(weight, [n_out, n_in], device).transpose()),
        bias: Some(Param::from_tensor(tensor(bias, [n_out], device))),
    }
}

/// BertEncoder's weights into burn's encoder: query, key, value, attention output, intermediate, output.
fn load(encoder: &mut TransformerEncoder, linears: &[(Vec<f32>, Vec<f32>, usize, usize)], device: &Device) {
    for (layer, chunk) in encoder.layers.iter_mut().zip(linears.chunks(LINEARS.len())) {
        let [q, k, v, o, inner, outer] = [0, 1, 2, 3, 4, 5].map(|i| {
            let (weight, bias, n_out, n_in) = &chunk[i];
            linear(weight, bias, *n_out, *n_in, device)
        });
        (layer.mha.query, layer.mha.key, layer.mha.value, layer.mha.output) = (q, k, v, o);
        (layer.pwff.linear_inner, layer.pwff.linear_outer) = (inner, outer);
    }
}

/// BertEncoder's parameter names (PyTorch's), each layer's in `named_parameters()` order.
fn bert_names() -> Vec<String> {
    let mut names = Vec::new();
    for layer in 0..N_LAYERS {
        for module in ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                       "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"] {
            names.extend(["weight", "bias"].map(|leaf| format!("layer.{layer}.{module}.{leaf}")));
        }
    }
    names
}

/// How BERT's names reach burn's encoder: (regex on the PyTorch name, burn's path), as a port
/// loading BERT's weights with burn-store's `KeyRemapper` writes them.
const BERT_TO_BURN: [(&str, &str); 8] = [
    (r"^layer\.(\d+)\.attention\.self\.(query|key|value)\.", "layers.$1.mha.$2."),
    (r"^layer\.(\d+)\.attention\.output\.dense\.", "layers.$1.mha.output."),
    (r"^layer\.(\d+)\.attention\.output\.LayerNorm\.weight$", "layers.$1.norm_1.gamma"),
    (r"^layer\.(\d+)\.attention\.output\.LayerNorm\.bias$", "layers.$1.norm_1.beta"),
    (r"^layer\.(\d+)\.intermediate\.dense\.", "layers.$1.pwff.linear_inner."),
    (r"^layer\.(\d+)\.output\.dense\.", "layers.$1.pwff.linear_outer."),
    (r"^layer\.(\d+)\.output\.LayerNorm\.weight$", "layers.$1.norm_2.gamma"),
    (r"^layer\.(\d+)\.output\.LayerNorm\.bias$", "layers.$1.norm_2.beta"),
];

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device().inner(); // inference: no autodiff, so no dropout
    let inputs = ramp(BATCH * SEQ * D_MODEL, 0);
    let linears = weights();
    let mut hashed: Vec<&[f32]> = vec![&inputs];
    for (weight, bias, _, _) in &linears {
        hashed.extend([weight.as_slice(), bias.as_slice()]);
    }
    let input_sha256 = inputs_sha256(&hashed);
    let config = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let config = TransformerEncoderConfig::new(D_MODEL, D_FF, N_HEADS, N_LAYERS);
            // book:end
            config
        }
        "fixed" => {
            // book:begin fixed
            let config = TransformerEncoderConfig::new(D_MODEL, D_FF, N_HEADS, N_LAYERS)
                .with_layer_norm_eps(1e-12); // BertConfig.layer_norm_eps
            // book:end
            config
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let mut encoder = config.init(&device);
    load(&mut encoder, &linears, &device);
    let mut recorder = Recorder::new().torch_names_from(bert_names(), &BERT_TO_BURN)?; // BERT's names and layouts
    recorder.params(&encoder)?; // the parameters and every module's settings (LayerNorm: epsilon)
    let x = tensor(&inputs, [BATCH, SEQ, D_MODEL], &device);
    let out = {
        let _listening = recorder.listen();
        let out = encoder.forward(TransformerEncoderInput::new(x));
        tap(&format!("layer.{}.output.LayerNorm", N_LAYERS - 1), &out); // the encoder's output, named as BERT's last LayerNorm
        out
    };
    println!("config.layer_norm_eps {:?}", config.layer_norm_eps);
    println!("layers.0.norm_1 {}", encoder.layers[0].norm_1);
    let first: Vec<f32> = values(out).into_iter().take(D_MODEL).collect();
    println!("out[0, 0] {first:?}");

    let builder = dump_builder("p10l", &args.variant, &input_sha256, &device).metadata("layer_norm_eps", format!("{:?}", config.layer_norm_eps));
    recorder.into_dump(builder)?.write(&args.out)?;
    Ok(())
}
