//! p09: burn's PositionWiseFeedForward (and the Transformer configs built on it) default to GELU
//! between the two linear layers; PyTorch's TransformerEncoderLayer defaults to ReLU.
use burn::nn::activation::ActivationConfig;
use burn::nn::transformer::{PositionWiseFeedForwardConfig, TransformerDecoderConfig, TransformerEncoderConfig};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita::torch_layout::{linear_from_torch, TorchLinearWeight};
use pita_lab::{device, tensor, values};

// book:begin setup
const D_MODEL: usize = 2;
const D_FF: usize = 2;
const W1: [f32; 4] = [-1.0, 1.0, 2.0, -0.5]; // PyTorch linear1.weight, [d_ff, d_model]
const B1: [f32; 2] = [0.0, 0.0];
const W2: [f32; 4] = [1.0, 0.0, 0.0, 1.0]; // PyTorch linear2.weight, [d_model, d_ff]
const B2: [f32; 2] = [0.0, 0.0];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device();
    let inputs = ramp(4, 0);
    let input_sha256 = inputs_sha256(&[&inputs, &W1, &B1, &W2, &B2]);
    let x = tensor(&inputs, [1, 2, D_MODEL], &device); // [batch, seq, d_model]
    let config = match args.variant.as_str() {
        "port" => {
            // book:begin port
            // dropout 0: PyTorch runs this block in eval mode
            let config = PositionWiseFeedForwardConfig::new(D_MODEL, D_FF).with_dropout(0.0);
            // book:end
            config
        }
        "fixed" => {
            // book:begin fixed
            let config = PositionWiseFeedForwardConfig::new(D_MODEL, D_FF)
                .with_dropout(0.0)
                .with_activation(ActivationConfig::Relu);
            // book:end
            config
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("PositionWiseFeedForwardConfig activation: {:?}", config.activation);
    if args.variant == "port" {
        let encoder = TransformerEncoderConfig::new(D_MODEL, D_FF, 1, 1);
        println!("TransformerEncoderConfig activation: {:?}", encoder.activation);
        let decoder = TransformerDecoderConfig::new(D_MODEL, D_FF, 1, 1);
        println!("TransformerDecoderConfig activation: {:?}", decoder.activation);
    }
    // book:begin weights
    let mut ffn = config.init(&device);
    ffn.linear_inner = linear_from_torch(TorchLinearWeight::new(tensor(&W1, [D_FF, D_MODEL], &device)), tensor(&B1, [D_FF], &device));
    ffn.linear_outer = linear_from_torch(TorchLinearWeight::new(tensor(&W2, [D_MODEL, D_FF], &device)), tensor(&B2, [D_MODEL], &device));
    let out = ffn.forward(x.clone());
    // book:end
    let hidden = ffn.linear_inner.forward(x);
    println!("hidden {:?}", values(hidden.clone()));
    println!("out {:?}", values(out.clone()));

    // the activation as the config holds it, for the defaults table
    let mut dump = dump_builder("p09", &args.variant, &input_sha256, &device)
        .metadata("activation", format!("{:?}", config.activation))
        .build()?;
    dump.tensor("hidden", hidden)?.tensor("out", out)?;
    dump.write(&args.out)?;
    Ok(())
}
