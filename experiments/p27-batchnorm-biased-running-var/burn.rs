//! p27: training-mode forwards through BatchNorm. burn updates `running_var` with the biased
//! batch variance (divided by n), PyTorch with the unbiased one (divided by n - 1): one step
//! (`port`, `fixed`), and STEPS steps, after which running_var has forgotten its start
//! (`port-long`, `fixed-long`).
use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig};
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const BATCH: usize = 4;
const FEATURES: usize = 2;
// book:end
// book:begin steps
const STEPS: usize = 200; // training steps of the long run, each on the same batch
// book:end

// book:begin unbias
/// Redoes the last running_var update with the unbiased batch variance, as PyTorch does:
/// the batch term `running_var - (1 - m)·before` is `m·var_biased`; scale it by n / (n - 1).
/// `n` is the number of values per channel (batch × spatial size).
fn unbias_running_var(norm: &BatchNorm, before: Tensor<1>, n: usize) {
    let keep = before.mul_scalar(1.0 - norm.momentum);
    let batch_term = norm.running_var.value_sync() - keep.clone();
    let unbiased = batch_term.mul_scalar(n as f64 / (n as f64 - 1.0));
    norm.running_var.update(keep + unbiased);
}
// book:end

/// STEPS training-mode forwards on the same batch, each update unbiased when `fix`.
fn train_long(norm: &BatchNorm, x: Tensor<2>, fix: bool) {
    // book:begin long
    for _ in 0..STEPS {
        let before = norm.running_var.value_sync();
        let _y = norm.forward(x.clone());
        if fix {
            unbias_running_var(norm, before, BATCH);
        }
    }
    // book:end
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "port-long", "fixed-long"]);
    let long = args.variant.ends_with("-long");
    let device = device(); // Flex wrapped in Autodiff: the training device
    let inputs = ramp(8, 0);
    let input_sha256 = inputs_sha256(&[&inputs]);
    let x = tensor(&inputs, [BATCH, FEATURES], &device);
    let norm = BatchNormConfig::new(FEATURES).init(&device); // momentum 0.1, epsilon 1e-5
    // book:begin before
    let before = norm.running_var.value_sync(); // running_var before this step's forward
    // book:end

    if long {
        train_long(&norm, x.clone(), args.variant == "fixed-long");
    } else {
        // book:begin step
        let _y = norm.forward(x.clone()); // a training step's forward: updates the running statistics
        // book:end
        if args.variant == "fixed" {
            // book:begin fixed
            unbias_running_var(&norm, before.clone(), BATCH);
            // book:end
        }
    }
    // book:begin eval
    let eval_norm = norm.valid();
    let out = eval_norm.forward(x.clone().inner()); // evaluation uses the running statistics
    // book:end
    let running_mean = eval_norm.running_mean.value_sync();
    let running_var = eval_norm.running_var.value_sync();
    println!("batch variance, biased   {:?}", values(x.clone().var_bias(0)));
    println!("batch variance, unbiased {:?}", values(x.var(0)));
    println!("running_mean {:?}", values(running_mean.clone()));
    println!("running_var  {:?}", values(running_var.clone()));
    println!("eval out {:?}", values(out.clone()));

    let mut dump = dump_builder("p27", &args.variant, &input_sha256, &device)
        .metadata("batch_size", BATCH)
        .metadata("momentum", eval_norm.momentum)
        .metadata("steps", if long { STEPS } else { 1 }).build()?;
    dump.tensor("running_var.before", before)?
        .tensor("running_mean", running_mean)?
        .tensor("running_var", running_var)?
        .tensor("out.eval", out)?;
    dump.write(&args.out)?;
    Ok(())
}
