//! p25a: dropout across frameworks. burn's Dropout draws its mask from burn's generator, PyTorch's
//! from PyTorch's: the same seed gives other masks, although each side repeats its own. Replaying
//! PyTorch's recorded masks (pita::replay) aligns them; eval mode (`valid()`) has none to align.
use burn::module::{Module, Param};
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::{Device, Tensor};
use pita::record::{tap, Recorder};
use pita::replay::{self, Replay};
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, dump_builder, tensor, values};

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
        let x = self.fc.forward(x);
        tap("fc", &x); // recorded as act/fc while a recorder listens
        let x = replay::dropout("drop", &self.drop, x); // burn's own mask, or PyTorch's while a replay is active
        tap("drop", &x);
        x
    }
}
// book:end

fn net(weight: &[f32], bias: &[f32], device: &Device) -> Net {
    // PyTorch's [out, in] weight / 8 (exact), transposed into burn's [in, out].
    let fc = Linear {
        weight: Param::from_tensor(tensor(weight, [8, 8], device).div_scalar(8.0).transpose()),
        bias: Some(Param::from_tensor(tensor(bias, [8], device))),
    };
    Net { fc, drop: DropoutConfig::new(P).init() }
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["seeded", "again", "replayed", "valid"]);
    let device = device();
    let inputs = ramp(32, 0);
    let weight = ramp(64, 0);
    let bias = ramp(8, 0);
    let input_sha256 = inputs_sha256(&[&inputs, &weight, &bias]);
    let model = net(&weight, &bias, &device);
    let mut recorder = Recorder::new().torch_names(true); // PyTorch's names and layouts
    let out = match args.variant.as_str() {
        "seeded" | "again" => {
            // book:begin seeded
            device.seed(SEED);
            recorder.params(&model)?;
            let out = {
                let _listening = recorder.listen();
                model.forward(tensor(&inputs, [4, 8], &device))
            };
            // book:end
            let loss = out.clone().powi_scalar(2).mean();
            recorder.loss(1, &loss)?;
            recorder.grads(&model, &loss.backward())?;
            out
        }
        "replayed" => {
            // book:begin replayed
            let masks = Replay::from_file(&args.out.join("torch-seeded.safetensors"))?; // PyTorch's recording
            recorder.params(&model)?;
            let out = {
                let _listening = recorder.listen();
                let _replaying = masks.step(1); // replay::dropout takes mask1/drop
                model.forward(tensor(&inputs, [4, 8], &device))
            };
            // book:end
            let loss = out.clone().powi_scalar(2).mean();
            recorder.loss(1, &loss)?;
            recorder.grads(&model, &loss.backward())?;
            out
        }
        "valid" => {
            // book:begin valid
            let eval_model = model.valid(); // dropout off, as model.eval()
            recorder.params(&eval_model)?;
            let _listening = recorder.listen();
            eval_model.forward(tensor(&inputs, [4, 8], &device.clone().inner()))
            // book:end
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let out_values = values(out.clone());
    let keeps: Vec<u8> = out_values.iter().map(|v| u8::from(*v != 0.0)).collect();
    println!("dropout on: {}", out.device().is_autodiff());
    println!("keeps {keeps:?}");
    println!("zeros {} of {}", keeps.iter().filter(|k| **k == 0).count(), keeps.len());

    let dump = recorder.into_dump(dump_builder("p25a", &args.variant, &input_sha256, &out.device()).metadata("dropout", P))?;
    dump.write(&args.out)?;
    Ok(())
}
