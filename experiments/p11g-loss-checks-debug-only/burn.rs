//! p11g: inputs PyTorch's losses refuse. burn 0.22.1's BinaryCrossEntropyLoss takes targets of -1
//! and GaussianNLLLoss a negative variance without a word; PyTorch's BCELoss and GaussianNLLLoss
//! raise. burn 0.23 adds these checks as `debug_assert!`, so a release build still computes.
use burn::nn::loss::{BinaryCrossEntropyLossConfig, GaussianNLLLossConfig, Reduction};
use burn::tensor::activation::softplus;
use burn::tensor::{Int, Tensor};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const LABELS: [f32; 6] = [1., -1., -1., 1., 1., -1.]; // attributes stored as ±1, not mapped to {0, 1}
// book:end

// book:begin checks
/// PyTorch's range checks, as `assert!`: unlike `debug_assert!`, they run in release builds too.
/// Each reads the tensor back to the host (a device sync).
fn check_bce_targets(targets: &Tensor<1, Int>) {
    let outside: i32 = targets.clone().lower_scalar(0).bool_or(targets.clone().greater_scalar(1)).int().sum().into_scalar();
    assert!(outside == 0, "BCE targets must be in [0, 1], as PyTorch's BCELoss requires");
}

fn check_variance(var: &Tensor<1>) {
    let negative: i32 = var.clone().lower_scalar(0.0).int().sum().into_scalar();
    assert!(negative == 0, "GaussianNLL variance must be non-negative, as PyTorch's GaussianNLLLoss requires");
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "checked", "checked-var"]);
    let device = device();
    let (probs_values, mean_values, target_values, raw_var_values) = (ramp(6, 6), ramp(6, 0), ramp(6, 3), ramp(6, 2));
    let input_sha256 = inputs_sha256(&[&probs_values, &LABELS, &mean_values, &target_values, &raw_var_values]);
    let probs = tensor(&probs_values, [6], &device).require_grad();
    let labels = tensor(&LABELS, [6], &device);
    let mean = tensor(&mean_values, [6], &device).require_grad();
    let target = tensor(&target_values, [6], &device);
    let raw_var = tensor(&raw_var_values, [6], &device);
    let bce = BinaryCrossEntropyLossConfig::new().with_logits(false).init(&device); // logits = false: probabilities, like BCELoss
    let gnll = GaussianNLLLossConfig::new().init(); // eps 1e-6, like PyTorch

    let (targets, var) = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let targets = labels.int();
            let var = raw_var;
            // book:end
            (targets, var)
        }
        "fixed" => {
            // book:begin fixed
            let targets = ((labels + 1.0) / 2.0).int(); // {-1, 1} -> {0, 1}
            let var = softplus(raw_var, 1.0);
            // book:end
            (targets, var)
        }
        "checked" => {
            // book:begin checked
            let targets = labels.int();
            let var = raw_var;
            check_bce_targets(&targets);
            check_variance(&var);
            // book:end
            (targets, var)
        }
        "checked-var" => {
            let targets = ((labels + 1.0) / 2.0).int();
            let var = raw_var;
            check_bce_targets(&targets);
            check_variance(&var);
            (targets, var)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    // book:begin losses
    let bce_loss = bce.forward(probs.clone(), targets.clone());
    let gnll_loss = gnll.forward(mean.clone(), target.clone(), var.clone(), Reduction::Mean);
    // book:end
    let bce_grad = probs.grad(&bce_loss.backward()).expect("probs.grad");
    let gnll_grad = mean.grad(&gnll_loss.backward()).expect("mean.grad");
    let bce_target = targets.float();
    println!("bce target {:?}", values(bce_target.clone()));
    println!("bce loss {:?}", values(bce_loss.clone()));
    println!("gnll var {:?}", values(var.clone()));
    println!("gnll loss {:?}", values(gnll_loss.clone()));
    println!("gnll mean.grad {:?}", values(gnll_grad.clone()));
    let mut dump = dump_builder("p11g", &args.variant, &input_sha256, &device).metadata("gnll_eps", gnll.eps).build()?;
    dump.tensor("bce.target", bce_target)?.tensor("bce.loss", bce_loss)?.tensor("bce.probs.grad", bce_grad)?;
    dump.tensor("gnll.mean", mean)?.tensor("gnll.target", target)?;
    // The gradient is printed, not dumped: a few clamped entries dwarf the rest, which compare would fit as one scale.
    dump.tensor("gnll.var", var)?.tensor("gnll.loss", gnll_loss)?;
    dump.write(&args.out)?;
    Ok(())
}
