//! p14: LeakyReLU and PReLU at an input of exactly 0. burn's default leaky_relu / prelu pick the
//! `x` branch with a strict `x < 0` mask, so the gradient at 0 is 1; PyTorch gives the slope.
use burn::nn::{LeakyReluConfig, PReluConfig};
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita::kink::assert_off_kinks;
use pita_lab::{device, tensor, values};

// book:begin setup
const X: [f32; 5] = [-1.0, -0.5, 0.0, 0.5, 1.0]; // x[2] is exactly 0, the kink of both activations
// book:end
const KINKS: &str = "0"; // recorded in the dump

// book:begin like_torch
/// leaky_relu with PyTorch's gradient at 0: the slope, i.e. 0 counts as negative.
fn leaky_relu_like_torch<const D: usize>(x: Tensor<D>, slope: f64) -> Tensor<D> {
    x.clone().mask_where(x.clone().lower_equal_elem(0.0), x.mul_scalar(slope))
}

/// prelu (one weight) with PyTorch's gradient at 0.
fn prelu_like_torch(x: Tensor<1>, alpha: Tensor<1>) -> Tensor<1> {
    x.clone().mask_where(x.clone().lower_equal_elem(0.0), x * alpha)
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "guard"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&X]);
    // book:begin modules
    let leaky = LeakyReluConfig::new().init(); // negative_slope 0.01
    let prelu = PReluConfig::new().init(&device); // one weight, 0.25
    // book:end
    let x1 = tensor(&X, [X.len()], &device).require_grad();
    let x2 = tensor(&X, [X.len()], &device).require_grad();
    let (leaky_out, prelu_out) = match args.variant.as_str() {
        // book:begin port
        "port" => (leaky.forward(x1.clone()), prelu.forward(x2.clone())),
        // book:end
        // book:begin fixed
        "fixed" => (
            leaky_relu_like_torch(x1.clone(), leaky.negative_slope),
            prelu_like_torch(x2.clone(), prelu.alpha.val()),
        ),
        // book:end
        "guard" => {
            // book:begin guard
            assert_off_kinks(&x1, &[0.0]); // the kink of leaky_relu and prelu
            // book:end
            (leaky.forward(x1.clone()), prelu.forward(x2.clone()))
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let grads_leaky = leaky_out.clone().sum().backward();
    let grads_prelu = prelu_out.clone().sum().backward();
    let leaky_grad = x1.grad(&grads_leaky).expect("x.grad");
    let prelu_grad = x2.grad(&grads_prelu).expect("x.grad");
    let weight_grad = prelu.alpha.val().grad(&grads_prelu).expect("weight.grad");
    println!("leaky_relu x.grad {:?}", values(leaky_grad.clone()));
    println!("prelu      x.grad {:?} weight.grad {:?}", values(prelu_grad.clone()), values(weight_grad.clone()));

    let mut dump = dump_builder("p14", &args.variant, &input_sha256, &device)
        .metadata("leaky_relu.kinks", KINKS)
        .metadata("prelu.kinks", KINKS).build()?;
    dump.tensor("leaky_relu.x", x1.detach())?
        .tensor("leaky_relu.out", leaky_out.detach())?
        .tensor("leaky_relu.grad", leaky_grad)?
        .tensor("prelu.x", x2.detach())?
        .tensor("prelu.out", prelu_out.detach())?
        .tensor("prelu.grad", prelu_grad)?
        .tensor("prelu.weight.grad", weight_grad)?;
    dump.write(&args.out)?;
    Ok(())
}
