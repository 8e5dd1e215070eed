//! p03: burn's `transpose()` swaps the last two dimensions (PyTorch's `.mT`); PyTorch's `.T` on a
//! 3-D tensor reverses all of them. With equal dimensions the shapes agree and only values differ.
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device();
    // book:begin inputs
    let inputs = ramp(8, 0);
    let x = tensor(&inputs, [2, 2, 2], &device);
    // book:end
    let input_sha256 = inputs_sha256(&[&inputs]);
    let wide = Tensor::<3>::zeros([2, 3, 4], &device);
    let out = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let out = x.transpose(); // torch: x.T
            // book:end
            println!("transpose() of [2, 3, 4] has shape {:?}", wide.transpose().dims());
            out
        }
        "fixed" => {
            // book:begin fixed
            let out = x.permute([2, 1, 0]); // torch: x.T reverses every dimension
            // book:end
            println!("permute([2, 1, 0]) of [2, 3, 4] has shape {:?}", wide.permute([2, 1, 0]).dims());
            out
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("{} out {:?}", args.variant, values(out.clone()));

    let mut dump = dump_builder("p03", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("out", out)?;
    dump.write(&args.out)?;
    Ok(())
}
