//! p01: integer division of negative operands. burn's Int `/` truncates toward zero (Rust's
//! `/`), where PyTorch's `//` floors; `remainder` follows the divisor's sign on both sides, so
//! `quotient * b + remainder == a` no longer holds in the direct port.
use burn::tensor::{Device, Int, Tensor, TensorData};
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita_lab::compat::ndarray_device;
use pita_lab::{device};

// book:begin setup
const A: [i64; 4] = [-7, 7, -7, 7];
const B: [i64; 4] = [2, 2, -2, -2];
// book:end

fn ints(values: &[i64], device: &Device) -> Tensor<1, Int> {
    Tensor::from_data(TensorData::new(values.to_vec(), [values.len()]), device)
}

fn int_values(tensor: Tensor<1, Int>) -> Vec<i64> {
    tensor.into_data().convert::<i64>().try_to_vec::<i64>().expect("i64 data")
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "port-ndarray", "fixed"]);
    // book:begin ndarray
    let device = if args.variant == "port-ndarray" { ndarray_device() } else { device() };
    // book:end
    let as_f32 = |v: &[i64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let input_sha256 = inputs_sha256(&[&as_f32(&A), &as_f32(&B)]);
    let a = ints(&A, &device);
    let b = ints(&B, &device);

    let (quotient, remainder) = match args.variant.as_str() {
        "port" | "port-ndarray" => {
            // book:begin port
            let quotient = a.clone() / b.clone(); // torch: a // b
            let remainder = a.clone().remainder(b.clone()); // torch: a % b
            // book:end
            (quotient, remainder)
        }
        "fixed" => {
            // book:begin fixed
            // a - a % b is an exact multiple of b, so truncating it is flooring a / b.
            let remainder = a.clone().remainder(b.clone());
            let quotient = (a.clone() - remainder.clone()) / b.clone();
            // book:end
            (quotient, remainder)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("{} quotient dtype {:?}", args.variant, quotient.dtype());
    println!("{} quotient {:?}", args.variant, int_values(quotient.clone()));
    println!("{} remainder {:?}", args.variant, int_values(remainder.clone()));
    let identity = (quotient.clone() * b + remainder.clone()).equal(a);
    let identity = identity.into_data().convert::<bool>().try_to_vec::<bool>().expect("bool data");
    println!("{} quotient*b + remainder == a: {identity:?}", args.variant);

    let mut dump = dump_builder("p01", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("quotient", quotient.float())?.tensor("remainder", remainder.float())?;
    dump.write(&args.out)?;
    Ok(())
}
