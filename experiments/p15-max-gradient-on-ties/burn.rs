//! p15: the gradient of a tied maximum. burn's full `max()` is `max_dim` on the flattened
//! tensor, which sends the whole gradient to one index; `max_pair` is a `mask_where` that sends
//! it to `self` on a tie. PyTorch splits it evenly in both cases.
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita::kink::assert_unique_max;
use pita_lab::{device, tensor, values};

// book:begin setup
const MAX_X: [f32; 3] = [1.0, 3.0, 3.0]; // the maximum 3 appears twice
const PAIR_A: [f32; 2] = [2.0, 1.0]; // max_pair(a, b): a[0] == b[0] is a tie
const PAIR_B: [f32; 2] = [2.0, 3.0];
// book:end

// book:begin like_torch
/// max() with PyTorch's gradient: split evenly between the tied maxima.
fn max_like_torch(x: Tensor<1>) -> Tensor<1> {
    let max: f32 = x.clone().max().into_scalar();
    let is_max = x.clone().equal_elem(max).float(); // a constant: no gradient flows through it
    (x * is_max.clone()).sum() / is_max.sum()
}

/// max_pair with PyTorch's gradient: half to each operand on a tie.
fn max_pair_like_torch(a: Tensor<1>, b: Tensor<1>) -> Tensor<1> {
    let tie = a.clone().equal(b.clone());
    let half = (a.clone() + b.clone()).mul_scalar(0.5);
    a.max_pair(b).mask_where(tie, half)
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "guard"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&MAX_X, &PAIR_A, &PAIR_B]);
    let leaf = |values: &[f32]| tensor(values, [values.len()], &device).require_grad();
    let (x, x_dim, a, b) = (leaf(&MAX_X), leaf(&MAX_X), leaf(&PAIR_A), leaf(&PAIR_B));
    let (max, max_dim, pair) = match args.variant.as_str() {
        // book:begin port
        "port" => (
            x.clone().max(), // full reduction
            x_dim.clone().max_dim(0), // along a dim
            a.clone().max_pair(b.clone()).sum(),
        ),
        // book:end
        // book:begin fixed
        "fixed" => (
            max_like_torch(x.clone()),
            x_dim.clone().max_dim(0), // already agrees
            max_pair_like_torch(a.clone(), b.clone()).sum(),
        ),
        // book:end
        "guard" => {
            // book:begin guard
            assert_unique_max(&x);
            let max = x.clone().max();
            // book:end
            (max, x_dim.clone().max_dim(0), a.clone().max_pair(b.clone()).sum())
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let max_grad = x.grad(&max.backward()).expect("x.grad");
    let max_dim_grad = x_dim.grad(&max_dim.backward()).expect("x.grad");
    let grads = pair.backward();
    let (a_grad, b_grad) = (a.grad(&grads).expect("a.grad"), b.grad(&grads).expect("b.grad"));
    println!("max()          x.grad {:?}", values(max_grad.clone()));
    println!("max_dim(0)     x.grad {:?}", values(max_dim_grad.clone()));
    println!("max_pair(a, b) a.grad {:?} b.grad {:?}", values(a_grad.clone()), values(b_grad.clone()));

    let mut dump = dump_builder("p15", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("max.grad", max_grad)?
        .tensor("max_dim.grad", max_dim_grad)?
        .tensor("maximum.a.grad", a_grad)?
        .tensor("maximum.b.grad", b_grad)?;
    dump.write(&args.out)?;
    Ok(())
}
