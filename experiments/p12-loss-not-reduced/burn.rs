//! p12: a per-sample loss passed to backward. burn seeds the root with ones, i.e. backpropagates
//! the sum, so gradients are batch-size times PyTorch's `.mean()` gradients.
use pita_lab::dump_builder;
use pita::guard::backward_scalar;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, linear, tensor, values};

// book:begin setup
const BATCH: usize = 4;
const WEIGHT: [f32; 3] = [0.5, -0.25, 0.75];
const BIAS: [f32; 1] = [0.1];
const TARGETS: [f32; BATCH] = [1.0, 0.0, -1.0, 2.0];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["nomean", "mean", "guard"]);
    let device = device();
    let inputs = ramp(12, 0);
    let input_sha256 = inputs_sha256(&[&inputs, &TARGETS, &WEIGHT, &BIAS]);
    // book:begin model
    // burn's Linear stores the weight as [d_input, d_output]: [[0.5], [-0.25], [0.75]].
    let fc = linear(&WEIGHT, [3, 1], &BIAS, &device);
    // book:end
    let x = tensor(&inputs, [BATCH, 3], &device);
    let y = tensor(&TARGETS, [BATCH, 1], &device);

    // book:begin per_sample
    let per_sample = (fc.forward(x) - y).powi_scalar(2); // [4, 1], forgot .mean()
    // book:end
    println!("per_sample dims {:?}", per_sample.dims());
    let grads = match args.variant.as_str() {
        "nomean" => {
            // book:begin nomean
            let grads = per_sample.backward();
            // book:end
            grads
        }
        "mean" => {
            // book:begin mean
            let grads = per_sample.mean().backward();
            // book:end
            grads
        }
        "guard" => {
            // book:begin guard
            let per_sample = per_sample.flatten::<1>(0, 1); // [4]: the rank fits, the shape does not
            let grads = backward_scalar(per_sample);
            // book:end
            grads
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let weight_grad = fc.weight.val().grad(&grads).expect("weight.grad");
    let bias_grad = fc.bias.as_ref().unwrap().val().grad(&grads).expect("bias.grad");
    println!("{} weight.grad {:?}", args.variant, values(weight_grad.clone()));
    println!("{} bias.grad {:?}", args.variant, values(bias_grad.clone()));

    let mut dump = dump_builder("p12", &args.variant, &input_sha256, &device)
        .metadata("batch_size", BATCH).build()?;
    dump.tensor("weight.grad", weight_grad)?.tensor("bias.grad", bias_grad)?;
    dump.write(&args.out)?;
    Ok(())
}
