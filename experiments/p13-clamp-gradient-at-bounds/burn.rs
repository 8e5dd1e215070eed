//! p13: clamp, relu6 and hardtanh at inputs lying exactly on a bound. burn's clamp is a
//! mask_fill on strict comparisons, so an element on the bound counts as inside and gets
//! gradient 1; PyTorch gives 0 there. With tensor bounds (`max_pair`/`min_pair`, variant
//! `tensor-bounds`) burn still gives x the whole gradient on a tie; PyTorch splits it evenly
//! between x and the bound.
use burn::tensor::{activation, Tensor};
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita::kink::assert_off_kinks;
use pita_lab::{device, tensor, values};

// book:begin setup
const CLAMP_X: [f32; 5] = [-1.0, -0.5, 0.0, 0.5, 1.0]; // clamp(x, -0.5, 0.5)
const RELU6_X: [f32; 5] = [-1.0, 0.0, 3.0, 6.0, 7.0]; // relu6 = clamp(x, 0, 6), and relu
const HARDTANH_X: [f32; 5] = [-2.0, -1.0, 0.0, 1.0, 2.0]; // hardtanh(x, -1, 1)
// book:end
// book:begin tensor_setup
const MIN: f32 = -0.5; // the same bounds as above, held in tensors the size of x
const MAX: f32 = 0.5;
// book:end
// Where each op has a kink, recorded in the dump for the claims.
const KINKS: [(&str, &str); 4] = [("clamp", "-0.5,0.5"), ("relu6", "0,6"), ("hardtanh", "-1,1"), ("relu", "0")];

// book:begin grad_of
/// f(x) and d sum(f(x)) / dx.
fn grad_of(values: &[f32], f: impl Fn(Tensor<1>) -> Tensor<1>) -> [Tensor<1>; 3] {
    let x = tensor(values, [values.len()], &device()).require_grad();
    let out = f(x.clone());
    let grads = out.clone().sum().backward();
    let grad = x.grad(&grads).expect("x.grad");
    [x.detach(), out.detach(), grad]
}
// book:end

// book:begin clamp_like_torch
/// clamp with PyTorch's gradient: 1 strictly between the bounds, 0 on and outside them.
fn clamp_like_torch<const D: usize>(x: Tensor<D>, min: f32, max: f32) -> Tensor<D> {
    let on_or_outside = x.clone().lower_equal_elem(min).bool_or(x.clone().greater_equal_elem(max));
    let clamped = x.clone().detach().clamp(min, max); // the same values, cut off from the graph
    x.mask_where(on_or_outside, clamped)
}
// book:end

// book:begin clamp_tensors_like_torch
/// clamp with tensor bounds and PyTorch's gradient: where x equals a bound, the gradient is
/// split evenly between x and that bound ((x + bound) / 2 is x there, exactly).
fn clamp_tensors_like_torch(x: Tensor<1>, min: Tensor<1>, max: Tensor<1>) -> Tensor<1> {
    let clamped = x.clone().max_pair(min.clone()).min_pair(max.clone());
    let (on_min, on_max) = (x.clone().equal(min.clone()), x.clone().equal(max.clone()));
    let (split_min, split_max) = ((x.clone() + min).mul_scalar(0.5), (x + max).mul_scalar(0.5));
    clamped.mask_where(on_min, split_min).mask_where(on_max, split_max)
}
// book:end

/// clamp(x, min tensor, max tensor) as a direct port (`max_pair`, then `min_pair`) or with
/// PyTorch's gradient, and the gradients of x and of both bounds, by dump name.
fn tensor_bounds(like_torch: bool) -> Vec<(&'static str, Tensor<1>)> {
    let device = device();
    // book:begin tensor_bounds
    let x = tensor(&CLAMP_X, [CLAMP_X.len()], &device).require_grad();
    let min = Tensor::full([CLAMP_X.len()], MIN, &device).require_grad();
    let max = Tensor::full([CLAMP_X.len()], MAX, &device).require_grad();
    let out = x.clone().max_pair(min.clone()).min_pair(max.clone()); // clamp with tensor bounds
    // book:end
    let out = if like_torch { clamp_tensors_like_torch(x.clone(), min.clone(), max.clone()) } else { out };
    let grads = out.clone().sum().backward();
    let grad = |t: &Tensor<1>| t.grad(&grads).expect("a gradient");
    let (x_grad, min_grad, max_grad) = (grad(&x), grad(&min), grad(&max));
    println!("tclamp   x {:?} out {:?} grad {:?}", values(x.clone()), values(out.clone()), values(x_grad.clone()));
    println!("         min.grad {:?} max.grad {:?}", values(min_grad.clone()), values(max_grad.clone()));
    vec![("tclamp.x", x.detach()), ("tclamp.min", min.detach()), ("tclamp.max", max.detach()), ("tclamp.out", out.detach()),
         ("tclamp.grad", x_grad), ("tclamp.min.grad", min_grad), ("tclamp.max.grad", max_grad)]
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "guard", "tensor-bounds", "tensor-bounds-fixed"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&CLAMP_X, &RELU6_X, &HARDTANH_X]);
    if args.variant.starts_with("tensor-bounds") {
        let tensors = tensor_bounds(args.variant == "tensor-bounds-fixed");
        let mut dump = dump_builder("p13", &args.variant, &input_sha256, &device)
            .metadata("tclamp.kinks", format!("{MIN},{MAX}"))
            .build()?;
        for (name, t) in tensors {
            dump.tensor(name, t)?;
        }
        dump.write(&args.out)?;
        return Ok(());
    }
    let results = match args.variant.as_str() {
        "port" => {
            // book:begin port
            [
                ("clamp", grad_of(&CLAMP_X, |x| x.clamp(-0.5, 0.5))),
                ("relu6", grad_of(&RELU6_X, activation::relu6)),
                ("hardtanh", grad_of(&HARDTANH_X, |x| activation::hardtanh(x, -1.0, 1.0))),
                ("relu", grad_of(&RELU6_X, activation::relu)),
            ]
            // book:end
        }
        "fixed" => {
            // book:begin fixed
            [
                ("clamp", grad_of(&CLAMP_X, |x| clamp_like_torch(x, -0.5, 0.5))),
                ("relu6", grad_of(&RELU6_X, |x| clamp_like_torch(x, 0.0, 6.0))),
                ("hardtanh", grad_of(&HARDTANH_X, |x| clamp_like_torch(x, -1.0, 1.0))),
                ("relu", grad_of(&RELU6_X, activation::relu)), // relu already agrees
            ]
            // book:end
        }
        "guard" => {
            // book:begin guard
            let checked = |x: Tensor<1>| {
                assert_off_kinks(&x, &[-0.5, 0.5]); // the clamp's bounds
                x.clamp(-0.5, 0.5)
            };
            // book:end
            [
                ("clamp", grad_of(&CLAMP_X, checked)),
                ("relu6", grad_of(&RELU6_X, activation::relu6)),
                ("hardtanh", grad_of(&HARDTANH_X, |x| activation::hardtanh(x, -1.0, 1.0))),
                ("relu", grad_of(&RELU6_X, activation::relu)),
            ]
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let mut builder = dump_builder("p13", &args.variant, &input_sha256, &device);
    for (name, kinks) in KINKS {
        builder = builder.metadata(format!("{name}.kinks"), kinks);
    }
    let mut dump = builder.build()?;
    for (name, [x, out, grad]) in results {
        println!("{name:<8} x {:?} out {:?} grad {:?}", values(x.clone()), values(out.clone()), values(grad.clone()));
        dump.tensor(&format!("{name}.x"), x)?.tensor(&format!("{name}.out"), out)?.tensor(&format!("{name}.grad"), grad)?;
    }
    dump.write(&args.out)?;
    Ok(())
}
