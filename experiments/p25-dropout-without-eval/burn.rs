//! p25: an evaluation pass on the training (autodiff) device. burn has no `eval()`: Dropout is
//! active whenever its input is on an autodiff device, until `valid()` turns the model off.
use burn::module::{Module, Param};
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::{Device, Tensor};
use pita_lab::dump_builder;
use pita::inference::assert_inference;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const P: f64 = 0.5; // dropout probability
const SEED: u64 = 0;
// book:end

// book:begin model
#[derive(Module, Debug)]
struct Net {
    fc: Linear,
    drop: Dropout,
}

impl Net {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.drop.forward(self.fc.forward(x))
    }
}
// book:end

fn net(weight: &[f32], bias: &[f32], device: &Device) -> Net {
    // PyTorch's [out, in] weight, transposed into burn's [in, out].
    let fc = Linear {
        weight: Param::from_tensor(tensor(weight, [4, 4], device).transpose()),
        bias: Some(Param::from_tensor(tensor(bias, [4], device))),
    };
    Net { fc, drop: DropoutConfig::new(P).init() }
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "valid", "mixed", "guard"]);
    let device = device(); // Flex wrapped in Autodiff: the training device
    device.seed(SEED);
    let inputs = ramp(8, 0);
    let weight = ramp(16, 8);
    let bias = ramp(4, 24);
    let input_sha256 = inputs_sha256(&[&inputs, &weight, &bias]);
    // book:begin train_model
    let model = net(&weight, &bias, &device); // the model being trained
    // book:end

    let out = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let x = tensor(&inputs, [2, 4], &device);
            let out = model.forward(x);
            // book:end
            out
        }
        "valid" => {
            // book:begin valid
            let eval_model = model.valid();
            let x = tensor(&inputs, [2, 4], &device.clone().inner());
            let out = eval_model.forward(x);
            // book:end
            out
        }
        "mixed" => {
            // book:begin mixed
            let eval_model = model.valid();
            let x = tensor(&inputs, [2, 4], &device); // still the autodiff device
            let out = eval_model.forward(x);
            // book:end
            out
        }
        "guard" => {
            // book:begin guard
            let x = tensor(&inputs, [2, 4], &device);
            assert_inference(&model, &x); // panics: the model is still in training mode
            // book:end
            model.forward(x)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("output on autodiff device: {}", out.device().is_autodiff());
    let out_values = values(out.clone());
    println!("out {out_values:?}");
    println!("zeros {} of {}", out_values.iter().filter(|v| **v == 0.0).count(), out_values.len());

    let mut dump = dump_builder("p25", &args.variant, &input_sha256, &out.device()).metadata("dropout", P).build()?;
    dump.tensor("out", out)?;
    dump.write(&args.out)?;
    Ok(())
}
