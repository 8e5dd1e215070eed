//! p11c: `SmoothL1Loss::forward` returns the element-wise loss; backward on it sums, so the
//! gradients are numel times PyTorch's `SmoothL1Loss()` (mean) gradients.
use burn::nn::loss::{Reduction, SmoothL1LossConfig};
use pita_lab::dump_builder;
use pita::guard::backward_scalar;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const SHAPE: [usize; 2] = [2, 3];
const TARGET: [f32; 6] = [1.0, 0.0, -1.0, 0.5, 0.0, -0.5];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "guard"]);
    let device = device();
    let pred_values = ramp(6, 0);
    let input_sha256 = inputs_sha256(&[&pred_values, &TARGET]);
    let pred = tensor(&pred_values, SHAPE, &device).require_grad();
    let target = tensor(&TARGET, SHAPE, &device);
    let smooth_l1 = SmoothL1LossConfig::new().init();
    let grads = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let loss = smooth_l1.forward(pred.clone(), target);
            let grads = loss.backward();
            // book:end
            println!("loss {:?} shape {:?}", values(loss.clone()), loss.dims());
            grads
        }
        "fixed" => {
            // book:begin fixed
            let loss = smooth_l1.forward_with_reduction(pred.clone(), target, Reduction::Mean);
            let grads = loss.backward();
            // book:end
            println!("loss {:?} shape {:?}", values(loss.clone()), loss.dims());
            grads
        }
        "guard" => {
            // book:begin guard
            let loss = smooth_l1.forward(pred.clone(), target).flatten::<1>(0, 1); // [6]
            let grads = backward_scalar(loss);
            // book:end
            grads
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let grad = pred.grad(&grads).expect("pred.grad");
    println!("pred.grad {:?}", values(grad.clone()));
    let mut dump = dump_builder("p11c", &args.variant, &input_sha256, &device)
        .metadata("numel", pred_values.len()).build()?;
    dump.tensor("pred.grad", grad)?;
    dump.write(&args.out)?;
    Ok(())
}
