//! p29a: a BatchNorm holding the trained gamma and beta of a PyTorch `BatchNorm1d` with
//! `track_running_stats=False`, evaluated. burn has no such option: in evaluation (`valid()`, the
//! inference device) it normalises with the running statistics (`port`), PyTorch with the
//! batch's own. Fixes: batch-statistics normalisation by hand (`fixed`), or the layer kept on the
//! training path (`train-mode`).
use burn::module::{Module, Param};
use burn::nn::{BatchNorm, BatchNormConfig};
use burn::tensor::module::batch_norm_train;
use burn::tensor::{Device, Tensor};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const BATCH: usize = 4;
const FEATURES: usize = 2;
const GAMMA: [f32; 2] = [1.5, 0.5]; // the trained weight and bias: small constants, exact in binary
const BETA: [f32; 2] = [0.25, -0.5];
// book:end

/// The port's layer: BatchNormConfig's defaults, with PyTorch's trained weight and bias loaded.
fn loaded_norm(device: &Device) -> BatchNorm {
    // book:begin port
    let mut norm = BatchNormConfig::new(FEATURES).init(device); // running_mean 0, running_var 1
    norm.gamma = Param::from_tensor(tensor(&GAMMA, [FEATURES], device));
    norm.beta = Param::from_tensor(tensor(&BETA, [FEATURES], device));
    // book:end
    norm
}

// book:begin batch_stats
/// BatchNorm with the batch's own mean and (biased) variance, on any device and in any mode:
/// PyTorch's `track_running_stats=False`. It neither reads nor writes the running statistics.
fn forward_batch_stats<const D: usize>(norm: &BatchNorm, x: Tensor<D>) -> Tensor<D> {
    batch_norm_train(x, norm.gamma.val(), norm.beta.val(), norm.epsilon).output
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "train-mode"]);
    let device = device(); // Flex wrapped in Autodiff: the training device
    let inputs = ramp(8, 0);
    let input_sha256 = inputs_sha256(&[&inputs, &GAMMA, &BETA]);
    let x = tensor(&inputs, [BATCH, FEATURES], &device);
    let norm = loaded_norm(&device);

    let (out, used) = match args.variant.as_str() {
        "port" => {
            // book:begin eval
            let eval_norm = norm.valid();
            let out = eval_norm.forward(x.inner()); // evaluation uses the running statistics
            // book:end
            (out, eval_norm)
        }
        "fixed" => {
            // book:begin fixed
            let eval_norm = norm.valid();
            let out = forward_batch_stats(&eval_norm, x.inner());
            // book:end
            (out, eval_norm)
        }
        "train-mode" => {
            // book:begin train_mode
            let out = norm.forward(x).detach().inner(); // training path: batch statistics, and a running-stats update
            // book:end
            (out, norm)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("running_mean {:?}", values(used.running_mean.value_sync()));
    println!("running_var  {:?}", values(used.running_var.value_sync()));
    println!("eval out {:?}", values(out.clone()));

    let mut dump = dump_builder("p29a", &args.variant, &input_sha256, &device)
        .metadata("batch_size", BATCH).build()?;
    dump.tensor("out.eval", out)?;
    dump.write(&args.out)?;
    Ok(())
}
