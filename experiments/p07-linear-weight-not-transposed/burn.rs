//! p07: a PyTorch Linear weight ([out, in]) copied into burn's Linear ([in, out]) without a
//! transpose. Square layers accept it and compute `x W + b` instead of `x Wᵀ + b`.
use burn::module::Param;
use burn::nn::Linear;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita::torch_layout::{linear_from_torch, TorchLinearWeight};
use pita_lab::{device, tensor, values};

// book:begin setup
const WEIGHT: [f32; 4] = [1.0, 2.0, 3.0, 4.0]; // PyTorch fc.weight [[1, 2], [3, 4]], [out, in]
const BIAS: [f32; 2] = [0.5, -0.5];
// book:end
// A PyTorch Linear(2, 3): weight [3, 2] = [out, in].
const WEIGHT_3X2: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
const BIAS_3: [f32; 3] = [0.5, -0.5, 0.0];

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "nonsquare"]);
    let device = device();
    let inputs = ramp(4, 0);
    let input_sha256 = inputs_sha256(&[&inputs, &WEIGHT, &BIAS]);
    let x = tensor(&inputs, [2, 2], &device);
    let fc = match args.variant.as_str() {
        "port" => {
            // book:begin port
            // The PyTorch state dict's values, copied as they are.
            let fc = Linear {
                weight: Param::from_tensor(tensor(&WEIGHT, [2, 2], &device)),
                bias: Some(Param::from_tensor(tensor(&BIAS, [2], &device))),
            };
            // book:end
            fc
        }
        "fixed" => {
            // book:begin fixed
            let weight = TorchLinearWeight::new(tensor(&WEIGHT, [2, 2], &device));
            let fc = linear_from_torch(weight, tensor(&BIAS, [2], &device)); // transposes to [in, out]
            // book:end
            fc
        }
        "nonsquare" => {
            // book:begin nonsquare
            // PyTorch Linear(2, 3): weight [3, 2], copied as it is, so burn reads d_input = 3.
            let fc = Linear {
                weight: Param::from_tensor(tensor(&WEIGHT_3X2, [3, 2], &device)),
                bias: Some(Param::from_tensor(tensor(&BIAS_3, [3], &device))),
            };
            // book:end
            fc
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("fc.weight {:?} {:?}", fc.weight.val().dims(), values(fc.weight.val()));
    // book:begin forward
    let out = fc.forward(x);
    // book:end
    println!("out {:?} {:?}", out.dims(), values(out.clone()));
    // Dumped in PyTorch's [out, in] layout: the weight this layer really multiplies by, as PyTorch would hold it.
    let weight = fc.weight.val().transpose();
    println!("weight as [out, in] {:?}", values(weight.clone()));

    let mut dump = dump_builder("p07", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("out", out)?.tensor("weight", weight)?;
    dump.write(&args.out)?;
    Ok(())
}
