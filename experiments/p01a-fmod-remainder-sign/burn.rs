//! p01a: `fmod` against `remainder` on floats with negative operands. burn's `%` operator is
//! `remainder` (the divisor's sign, like PyTorch's `%`), not Rust's `%` on `f32` (C's fmod); and
//! burn 0.22.1's `fmod` is composed as `x - y * trunc(x / y)`, whose rounded quotient can land on
//! an integer, so it can be off by a whole `|y|` where `torch.fmod` is exact.
use burn::tensor::Tensor;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, dump_builder, tensor};

// book:begin setup
fn inputs() -> (Vec<f32>, Vec<f32>) {
    let x = [ramp(24, 0), ramp(24, 0)].concat(); // 0.1·k − 0.5 for k = 0..23, twice
    let y = [vec![0.3f32; 24], vec![-0.3f32; 24]].concat(); // each dividend against +0.3 and -0.3
    (x, y)
}
// book:end

/// `fmod(x, y)` from `remainder` of the magnitudes: with both operands positive `remainder` is
/// Rust's exact `%`, and the sign of `x` is put back by an exact multiplication.
// book:begin fixed
fn fmod_exact<const D: usize>(x: Tensor<D>, y: Tensor<D>) -> Tensor<D> {
    x.clone().abs().remainder(y.abs()) * x.sign()
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "percent", "fixed"]);
    let device = device();
    let (xs, ys) = inputs();
    let input_sha256 = inputs_sha256(&[&xs, &ys]);
    let x: Tensor<1> = tensor(&xs, [xs.len()], &device);
    let y: Tensor<1> = tensor(&ys, [ys.len()], &device);

    let (fmod, remainder) = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let fmod = x.clone().fmod(y.clone()); // torch.fmod(x, y)
            let remainder = x.clone() % y.clone(); // torch: x % y
            // book:end
            (fmod, remainder)
        }
        "percent" => {
            // book:begin percent
            let fmod = x.clone() % y.clone(); // torch.fmod(x, y), read as Rust's f32 `%`
            let remainder = x.clone().remainder(y.clone());
            // book:end
            (fmod, remainder)
        }
        "fixed" => {
            // book:begin fixed-call
            let fmod = fmod_exact(x.clone(), y.clone());
            let remainder = x.clone() % y.clone();
            // book:end
            (fmod, remainder)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("x / y in float32 at x = {}: {}", xs[20], pita_lab::values(x.clone() / y.clone())[20]);
    let fmods = pita_lab::values(fmod.clone());
    let remainders = pita_lab::values(remainder.clone());
    for (name, value) in [("fmod", &fmods), ("remainder", &remainders)] {
        println!("{name}(1.5, 0.3) = {:.9}, {name}(-0.4, 0.3) = {:.9}, {name}(-0.4, -0.3) = {:.9}", value[20], value[1], value[25]);
    }

    let mut dump = dump_builder("p01a", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("x", x)?.tensor("y", y)?.tensor("fmod", fmod)?.tensor("remainder", remainder)?;
    dump.write(&args.out)?;
    Ok(())
}
