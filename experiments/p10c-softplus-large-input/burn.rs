//! p10c: burn's Softplus on large inputs. burn 0.22 switches to the identity above
//! `beta·x > threshold` (default 20), like PyTorch; a hand-written `log(1 + exp(x))` does not.
use burn::nn::SoftplusConfig;
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita::finite::assert_finite;
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const X: [f32; 11] = [-100.0, -20.0, -1.0, 0.0, 1.0, 19.5, 20.0, 20.5, 88.0, 89.0, 100.0];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "naive", "guard"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&X]);
    let x: Tensor<1> = tensor(&X, [X.len()], &device).require_grad();

    let y = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let softplus = SoftplusConfig::new().init(); // beta=1, threshold=20
            let y = softplus.forward(x.clone());
            // book:end
            y
        }
        // book:begin naive
        "naive" | "guard" => x.clone().exp().add_scalar(1.0).log(), // softplus as the formula reads
        // book:end
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let grads = y.clone().sum().backward();
    let x_grad = x.grad(&grads).expect("x.grad");
    println!("y {:?}", values(y.clone()));
    println!("x.grad {:?}", values(x_grad.clone()));
    if args.variant == "guard" {
        // book:begin guard
        assert_finite(&y, "y");
        assert_finite(&x_grad, "x.grad");
        // book:end
    }

    let mut dump = dump_builder("p10c", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("x", x)?.tensor("y", y)?.tensor("x.grad", x_grad)?;
    dump.write(&args.out)?;
    Ok(())
}
