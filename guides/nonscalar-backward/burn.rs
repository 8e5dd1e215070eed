//! Guide 「backward 与梯度的「非标量输出」」, burn side: PyTorch's `y.backward(v)` written in burn
//! as `(y * v).sum().backward()` (`weighted`), the same without `.sum()` (`weighted-nosum`), and
//! plain `y.backward()` on the non-scalar `y` (`plain`), which seeds the root with ones.
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["weighted", "weighted-nosum", "plain"]);
    let device = device();
    let (x_values, w_values, v_values) = (ramp(6, 0), ramp(6, 6), ramp(4, 12));
    let input_sha256 = inputs_sha256(&[&x_values, &w_values, &v_values]);
    // book:begin setup
    let x: Tensor<2> = tensor(&x_values, [2, 3], &device).require_grad();
    let w: Tensor<2> = tensor(&w_values, [3, 2], &device).require_grad();
    let v: Tensor<2> = tensor(&v_values, [2, 2], &device); // the `v` of y.backward(v): a constant
    let y = x.clone().matmul(w.clone()); // [2, 2]: not a scalar
    // book:end
    println!("y dims {:?}", y.dims());
    let grads = match args.variant.as_str() {
        "weighted" => {
            // book:begin weighted
            let grads = (y * v).sum().backward(); // PyTorch: y.backward(v)
            // book:end
            grads
        }
        "weighted-nosum" => {
            // book:begin weighted_nosum
            let grads = (y * v).backward(); // the root [2, 2] is seeded with ones: the same as .sum()
            // book:end
            grads
        }
        "plain" => {
            // book:begin plain
            let grads = y.backward(); // PyTorch: y.backward(torch.ones_like(y))
            // book:end
            grads
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    // book:begin grads
    let x_grad = x.grad(&grads).expect("x requires grad");
    let w_grad = w.grad(&grads).expect("w requires grad");
    // book:end
    println!("x.grad {:?}", values(x_grad.clone()));
    println!("w.grad {:?}", values(w_grad.clone()));
    let mut dump = dump_builder("nonscalar-backward", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("x.grad", x_grad)?.tensor("w.grad", w_grad)?;
    dump.write(&args.out)?;
    Ok(())
}
