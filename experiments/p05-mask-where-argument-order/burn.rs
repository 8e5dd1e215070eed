//! p05: `x.mask_where(mask, value)` takes `value` where the mask is true, so PyTorch's
//! `torch.where(mask, a, b)` is `b.mask_where(mask, a)`; the word-for-word port
//! `a.mask_where(mask, b)` swaps the two sources. `mask_fill` matches `masked_fill`.
use burn::tensor::{Bool, Tensor, TensorData};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const MASK: [bool; 4] = [true, false, true, false];
// book:end

// book:begin torch_where
/// PyTorch's `torch.where(mask, x, y)`: `x` where the mask is true, `y` elsewhere.
fn torch_where<const D: usize>(mask: Tensor<D, Bool>, x: Tensor<D>, y: Tensor<D>) -> Tensor<D> {
    y.mask_where(mask, x)
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device();
    let (a_values, b_values) = (ramp(4, 0), ramp(4, 4));
    let mask_values: Vec<f32> = MASK.iter().map(|&m| if m { 1.0 } else { 0.0 }).collect();
    let input_sha256 = inputs_sha256(&[&a_values, &b_values, &mask_values]);
    let a = tensor(&a_values, [4], &device);
    let b = tensor(&b_values, [4], &device);
    let mask = Tensor::<1, Bool>::from_data(TensorData::new(MASK.to_vec(), [4]), &device);

    let out = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let out = a.clone().mask_where(mask.clone(), b.clone()); // torch.where(mask, a, b)
            // book:end
            out
        }
        "fixed" => {
            // book:begin fixed
            let out = torch_where(mask.clone(), a.clone(), b.clone()); // torch.where(mask, a, b)
            // book:end
            out
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    // book:begin fill
    let filled = a.clone().mask_fill(mask.clone(), 0.0); // a.masked_fill(mask, 0.0)
    // book:end
    println!("a {:?}, b {:?}, mask {MASK:?}", values(a), values(b));
    println!("{} out {:?}", args.variant, values(out.clone()));
    println!("{} filled {:?}", args.variant, values(filled.clone()));

    let mut dump = dump_builder("p05", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("out", out)?.tensor("filled", filled)?;
    dump.write(&args.out)?;
    Ok(())
}
