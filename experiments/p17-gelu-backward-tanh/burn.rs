//! p17: the gradient of GELU. The forward is the exact erf form on every backend, but the
//! backward is a backend op: Flex overrides it with the exact derivative, the default (used by
//! NdArray) is the derivative of the tanh approximation.
use burn::tensor::activation::gelu;
use burn::tensor::Device;
use pita_lab::compat::ndarray_device;
use pita_lab::dump_builder;
use pita::gelu_grad::{assert_exact_gelu_backward, gelu_erf};
use pita_lab::inputs::inputs_sha256;
use pita_lab::{tensor, values};

// book:begin setup
const X: [f32; 8] = [-3.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 3.0];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["ndarray", "flex", "ndarray-erf", "ndarray-guard"]);
    let device = match args.variant.as_str() {
        // book:begin devices
        "flex" => Device::flex().autodiff(),
        "ndarray" | "ndarray-erf" | "ndarray-guard" => ndarray_device().autodiff(),
        // book:end
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("backend {device:?}"); // as burn prints the device
    if args.variant == "flex" || args.variant == "ndarray-guard" {
        // book:begin guard
        assert_exact_gelu_backward(&device);
        // book:end
        println!("assert_exact_gelu_backward: ok");
    }
    let input_sha256 = inputs_sha256(&[&X]);
    // book:begin port
    let x = tensor(&X, [X.len()], &device).require_grad();
    let y = gelu(x.clone());
    // book:end
    let y = match args.variant.as_str() {
        // book:begin fixed
        "ndarray-erf" => gelu_erf(x.clone()),
        // book:end
        _ => y,
    };
    // book:begin backward
    let grads = y.clone().sum().backward();
    let grad = x.grad(&grads).expect("x.grad");
    // book:end
    println!("gelu(x) {:?}", values(y.clone()));
    println!("x.grad {:?}", values(grad.clone()));

    let mut dump = dump_builder("p17", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("x", x)?.tensor("gelu(x)", y)?.tensor("x.grad", grad)?;
    dump.write(&args.out)?;
    Ok(())
}
