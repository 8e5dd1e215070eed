//! p16: two losses share an intermediate `h`. PyTorch's `retain_graph=True` lets both backward
//! through it; burn consumes the tape on the first backward and panics on the second.
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const W: [f32; 2] = [1.0, 2.0];
const V: [f32; 2] = [0.5, -1.0];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "detach", "fixed", "recompute"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&W, &V]);
    // book:begin forward
    let w = tensor(&W, [2], &device).require_grad();
    let v = tensor(&V, [2], &device).require_grad();
    let h = w.clone() * w.clone(); // shared by both losses
    let l1 = h.clone().sum();
    // book:end
    let add = |a: Option<Tensor<1>>, b: Option<Tensor<1>>| match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    let (w_grad, v_grad) = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let l2 = (h.clone() * v.clone()).sum();
            let grads1 = l1.backward();
            let grads2 = l2.backward(); // PyTorch: l1.backward(retain_graph=True); l2.backward()
            let w_grad = add(w.grad(&grads1), w.grad(&grads2)); // what .grad accumulates
            let v_grad = v.grad(&grads2);
            // book:end
            (w_grad, v_grad)
        }
        "detach" => {
            // book:begin detach
            let l2 = (h.clone().detach() * v.clone()).sum(); // "sever" h for the second loss
            let grads1 = l1.backward();
            let grads2 = l2.backward();
            let w_grad = add(w.grad(&grads1), w.grad(&grads2));
            let v_grad = v.grad(&grads2);
            // book:end
            println!("w.grad(&grads2) is {}", if w.grad(&grads2).is_some() { "Some" } else { "None" });
            (w_grad, v_grad)
        }
        "fixed" => {
            // book:begin fixed
            let l2 = (h.clone() * v.clone()).sum();
            let grads = (l1 + l2).backward(); // one backward through h
            // book:end
            (w.grad(&grads), v.grad(&grads))
        }
        "recompute" => {
            // book:begin recompute
            let grads1 = l1.backward();
            let h = w.clone() * w.clone(); // a fresh forward for the second loss
            let l2 = (h * v.clone()).sum();
            let grads2 = l2.backward();
            let w_grad = add(w.grad(&grads1), w.grad(&grads2));
            let v_grad = v.grad(&grads2);
            // book:end
            (w_grad, v_grad)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let (w_grad, v_grad) = (w_grad.expect("w.grad"), v_grad.expect("v.grad"));
    println!("w.grad {:?}", values(w_grad.clone()));
    println!("v.grad {:?}", values(v_grad.clone()));
    let mut dump = dump_builder("p16", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("w.grad", w_grad)?.tensor("v.grad", v_grad)?;
    dump.write(&args.out)?;
    Ok(())
}
