//! p11d: `cross_entropy_with_logits` takes the class axis as the last dim; PyTorch's
//! `F.cross_entropy` takes it as dim 1. On [N, C, L] inputs the direct port normalises over L.
use burn::tensor::loss::cross_entropy_with_logits;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const N: usize = 2;
const C: usize = 3;
const L: usize = 2;
const TARGET: [f32; N * C * L] = [1.0, 0.25, 0.0, 0.5, 0.0, 0.25, 0.0, 0.0, 0.5, 0.0, 0.5, 1.0];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "reshape", "fixed", "guard"]);
    let device = device();
    let logits_values = ramp(N * C * L, 0);
    let input_sha256 = inputs_sha256(&[&logits_values, &TARGET]);
    // book:begin inputs
    let logits = tensor(&logits_values, [N, C, L], &device).require_grad();
    let target = tensor(&TARGET, [N, C, L], &device);
    // book:end
    let loss = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let loss = cross_entropy_with_logits(logits.clone(), target);
            // book:end
            loss
        }
        "reshape" => {
            // book:begin reshape
            let loss = cross_entropy_with_logits(logits.clone().reshape([N * L, C]), target.reshape([N * L, C]));
            // book:end
            loss
        }
        "fixed" => {
            // book:begin fixed
            // [N, C, L] -> [N, L, C]: classes last, as burn expects
            let loss = cross_entropy_with_logits(logits.clone().swap_dims(1, 2), target.swap_dims(1, 2));
            // book:end
            loss
        }
        "guard" => {
            // book:begin guard
            let loss = pita::loss_guard::cross_entropy_with_logits(logits.clone(), target);
            // book:end
            loss
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let grads = loss.backward();
    let grad = logits.grad(&grads).expect("logits.grad");
    println!("loss {:?}", values(loss.clone()));
    println!("logits.grad {:?}", values(grad.clone()));
    let mut dump = dump_builder("p11d", &args.variant, &input_sha256, &device).metadata("batch_size", N).build()?;
    dump.tensor("loss", loss)?.tensor("logits.grad", grad)?;
    dump.write(&args.out)?;
    Ok(())
}
