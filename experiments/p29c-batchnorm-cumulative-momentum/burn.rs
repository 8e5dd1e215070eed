//! p29c: STEPS training batches through a BatchNorm, then an evaluation. PyTorch's
//! `momentum=None` keeps a cumulative moving average (factor 1/t at batch t); burn's momentum is
//! a fixed number, and dropping the `None` leaves the default 0.1 (`port`). Setting the layer's
//! momentum to 1/t before each batch gives the cumulative average of the means (`momentum`); the
//! variances also need PyTorch's unbiased update, as in p27 (`fixed`).
use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig};
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const BATCH: usize = 4;
const FEATURES: usize = 2;
const STEPS: usize = 5; // training batches
const SCALE: f32 = 0.5; // batch t is ramp(8, 8t)·SCALE^t: each batch its own mean and variance
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

/// One row per batch: each batch's mean and unbiased variance per feature, `[STEPS, FEATURES]`.
fn batch_statistics(batches: &[Tensor<2>]) -> (Tensor<2>, Tensor<2>) {
    let means = batches.iter().map(|x| x.clone().mean_dim(0)).collect();
    let variances = batches.iter().map(|x| x.clone().var(0)).collect();
    (Tensor::cat(means, 0), Tensor::cat(variances, 0))
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "momentum", "fixed"]);
    let (cumulative, unbias) = (args.variant != "port", args.variant == "fixed");
    let device = device(); // Flex wrapped in Autodiff: the training device
    // book:begin inputs
    let inputs: Vec<Vec<f32>> = (0..STEPS)
        .map(|t| ramp(8, 8 * t).iter().map(|v| v * SCALE.powi(t as i32)).collect()) // exact: a power of two
        .collect();
    // book:end
    let input_sha256 = inputs_sha256(&inputs.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let batches: Vec<Tensor<2>> = inputs.iter().map(|v| tensor(v, [BATCH, FEATURES], &device)).collect();

    // book:begin port
    let mut norm = BatchNormConfig::new(FEATURES).init(&device); // momentum: f64, the default 0.1
    // book:end
    for (t, x) in batches.iter().enumerate() {
        if cumulative {
            // book:begin cumulative
            norm.momentum = 1.0 / (t + 1) as f64; // batch t + 1 of a cumulative average: factor 1/(t + 1)
            // book:end
        }
        // book:begin before
        let before = norm.running_var.value_sync(); // running_var before this batch's forward
        // book:end
        // book:begin step
        let _y = norm.forward(x.clone()); // a training step's forward: updates the running statistics
        // book:end
        if unbias {
            // book:begin fixed
            unbias_running_var(&norm, before, BATCH);
            // book:end
        }
    }
    // book:begin eval
    let eval_norm = norm.valid();
    let out = eval_norm.forward(batches[STEPS - 1].clone().inner()); // the last training batch
    // book:end
    let (batch_mean, batch_var) = batch_statistics(&batches);
    let running_mean = eval_norm.running_mean.value_sync();
    let running_var = eval_norm.running_var.value_sync();
    println!("momentum at the last batch {}", eval_norm.momentum);
    println!("running_mean {:?}", values(running_mean.clone()));
    println!("running_var  {:?}", values(running_var.clone()));
    println!("eval out {:?}", values(out.clone()));

    let mut dump = dump_builder("p29c", &args.variant, &input_sha256, &device)
        .metadata("batch_size", BATCH)
        .metadata("momentum", eval_norm.momentum)
        .metadata("steps", STEPS).build()?;
    dump.tensor("batch_mean", batch_mean)?
        .tensor("batch_var", batch_var)?
        .tensor("running_mean", running_mean)?
        .tensor("running_var", running_var)?
        .tensor("out.eval", out)?;
    dump.write(&args.out)?;
    Ok(())
}
