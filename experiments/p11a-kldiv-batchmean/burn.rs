//! p11a: PyTorch's `KLDivLoss()` (reduction 'mean': divide by every element) ported with burn's
//! `Reduction::Auto`, which KLDivLoss treats as batchmean (divide by the batch size only).
use burn::nn::loss::{KLDivLossConfig, Reduction};
use burn::tensor::activation::log_softmax;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const BATCH: usize = 2;
const CLASSES: usize = 3;
const TARGET: [f32; BATCH * CLASSES] = [0.125, 0.375, 0.5, 0.5, 0.25, 0.25];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["auto", "mean"]);
    let device = device();
    let logits_values = ramp(BATCH * CLASSES, 0);
    let input_sha256 = inputs_sha256(&[&logits_values, &TARGET]);
    let logits = tensor(&logits_values, [BATCH, CLASSES], &device).require_grad();
    let target = tensor(&TARGET, [BATCH, CLASSES], &device);
    let log_probs = log_softmax(logits.clone(), 1);
    let loss = match args.variant.as_str() {
        "auto" => {
            // book:begin auto
            let kl = KLDivLossConfig::new().init();
            let loss = kl.forward(log_probs, target, Reduction::Auto);
            // book:end
            loss
        }
        "mean" => {
            // book:begin mean
            let kl = KLDivLossConfig::new().init();
            let loss = kl.forward(log_probs, target, Reduction::Mean);
            // book:end
            loss
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let grads = loss.backward();
    let grad = logits.grad(&grads).expect("logits.grad");
    println!("loss {:?}", values(loss.clone()));
    println!("logits.grad {:?}", values(grad.clone()));
    let mut dump = dump_builder("p11a", &args.variant, &input_sha256, &device)
        .metadata("batch_size", BATCH)
        .metadata("num_classes", CLASSES).build()?;
    dump.tensor("loss", loss)?.tensor("logits.grad", grad)?;
    dump.write(&args.out)?;
    Ok(())
}
