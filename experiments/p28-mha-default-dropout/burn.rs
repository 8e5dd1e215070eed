//! p28: self-attention through burn's MultiHeadAttention on the training (autodiff) device.
//! `MultiHeadAttentionConfig` defaults to dropout 0.1; PyTorch's MultiheadAttention to 0.0.
use burn::nn::attention::{MhaInput, MultiHeadAttention, MultiHeadAttentionConfig};
use burn::tensor::Device;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, linear, tensor, values};

// book:begin setup
const D_MODEL: usize = 2;
const HEADS: usize = 1;
const TOKENS: usize = 6;
const SEED: u64 = 0;
const IDENTITY: [f32; 4] = [1.0, 0.0, 0.0, 1.0]; // every projection is the identity, every bias 0
const ZEROS: [f32; 2] = [0.0, 0.0];
// book:end

/// The attention with identity projections and zero biases.
fn with_identity(mha: MultiHeadAttention, device: &Device) -> MultiHeadAttention {
    MultiHeadAttention {
        query: linear(&IDENTITY, [2, 2], &ZEROS, device),
        key: linear(&IDENTITY, [2, 2], &ZEROS, device),
        value: linear(&IDENTITY, [2, 2], &ZEROS, device),
        output: linear(&IDENTITY, [2, 2], &ZEROS, device),
        ..mha
    }
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "drop"]);
    let device = device(); // Flex wrapped in Autodiff: the training device
    device.seed(SEED);
    let inputs = ramp(12, 0);
    let input_sha256 = inputs_sha256(&[&inputs, &IDENTITY, &ZEROS]);
    let config = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let config = MultiHeadAttentionConfig::new(D_MODEL, HEADS); // dropout: default
            // book:end
            config
        }
        "fixed" => {
            // book:begin fixed
            let config = MultiHeadAttentionConfig::new(D_MODEL, HEADS).with_dropout(0.0);
            // book:end
            config
        }
        "drop" => {
            // book:begin drop
            let config = MultiHeadAttentionConfig::new(D_MODEL, HEADS).with_dropout(0.5);
            // book:end
            config
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let mha = with_identity(config.init(&device), &device);
    println!("dropout {}", mha.dropout.prob);
    let x = tensor(&inputs, [1, TOKENS, D_MODEL], &device);
    // book:begin forward
    let output = mha.forward(MhaInput::self_attn(x)); // weights: [1, 1, 6, 6]
    // book:end
    let weights = values(output.weights.clone());
    let row_sums: Vec<f32> = values(output.weights.clone().sum_dim(3));
    println!("weights zeros {} of {}", weights.iter().filter(|v| **v == 0.0).count(), weights.len());
    println!("weights row sums {:?}", row_sums);
    println!("context {:?}", values(output.context.clone()));

    let mut dump = dump_builder("p28", &args.variant, &input_sha256, &device)
        .metadata("dropout", mha.dropout.prob).build()?;
    dump.tensor("context", output.context)?.tensor("weights", output.weights)?;
    dump.write(&args.out)?;
    Ok(())
}
