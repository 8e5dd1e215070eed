//! A tiny port that dumps one tensor of each dtype a dump holds, for `pita compare`:
//! `standalone-port OUT_DIR` writes OUT_DIR/burn-port.safetensors and OUT_DIR/burn-port.json.
//! It also records one training step of a tiny model with `pita::record` (docs/recording.md),
//! for `pita trace`: OUT_DIR/burn-record.safetensors and OUT_DIR/burn-record.json.
//!
//! The values are those tests/test_rust_crate_standalone.py builds with numpy: x = 0.1·k − 0.5
//! (k = 0..6, computed in f64, rounded to f32), y = 2x + 1 computed on the device in f32, and
//! y rounded to bf16 and f16 by burn's cast.
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Bool, DType, Device, FloatDType, Int, Tensor, TensorData};
use pita::dump::Dump;
use pita::guard::try_backward_scalar;
use pita::record::{tap, Recorder};

const SEED: u64 = 0;

/// The model a port would have, its fields named as the PyTorch attributes.
#[derive(Module, Debug)]
struct Tiny {
    fc1: Linear,
    fc2: Linear,
}

impl Tiny {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let x = self.fc1.forward(x);
        tap("fc1", &x); // a no-op unless a recorder listens
        let x = self.fc2.forward(relu(x));
        tap("fc2", &x);
        x
    }
}

/// One step of SGD (lr 0.1) on a mean squared error, recorded under PyTorch's names and layouts.
fn record(out: &Path, device: &Device) -> Result<PathBuf, Box<dyn std::error::Error>> {
    // Seeded: unseeded, now and then every ReLU unit starts dead and fc1's gradient is all zeros.
    device.seed(SEED);
    let mut model = Tiny { fc1: LinearConfig::new(3, 4).init(device), fc2: LinearConfig::new(4, 1).init(device) };
    let inputs = Tensor::<2>::from_floats([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], device);
    let targets = Tensor::<2>::from_floats([[1.0], [0.0]], device);
    model.forward(inputs.clone()); // not recorded: nobody listens yet

    let mut recorder = Recorder::new().torch_names(true);
    recorder.params(&model)?;
    let loss = {
        let _listening = recorder.listen();
        (model.forward(inputs) - targets).powi_scalar(2).mean()
    };
    recorder.loss(1, &loss)?;
    let grads = loss.backward();
    recorder.grads(&model, &grads)?;
    let grads = GradientsParams::from_grads(grads, &model);
    model = SgdConfig::new().init().step(0.1, model, grads);
    recorder.step(1, &model)?;
    Ok(recorder.into_dump(Dump::builder().variant("record").experiment("standalone"))?.write(out)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).ok_or("usage: standalone-port OUT_DIR")?);
    let device = Device::flex().autodiff();

    let ramp64: Vec<f64> = (0..6).map(|k| 0.1 * k as f64 - 0.5).collect();
    let ramp32: Vec<f32> = ramp64.iter().map(|&v| v as f32).collect();
    let x = Tensor::<2>::from_data(TensorData::new(ramp32, [2, 3]), &device).require_grad();
    let y = x.clone() * 2.0 + 1.0;
    let x64 = Tensor::<1>::from_data(TensorData::new(ramp64, [6]), (&device, DType::F64));
    let ids = Tensor::<1, Int>::from_data(TensorData::new(vec![3i64, -1, 0, 1 << 40], [4]), (&device, DType::I64));
    let mask = Tensor::<1, Bool>::from_bool(TensorData::from([true, false, true]), &device);

    // The guard's Result form: a per-element "loss" is refused, the reduced one goes through.
    let refused = try_backward_scalar(y.clone().flatten::<1>(0, 1)).is_err();
    let grads = try_backward_scalar(y.clone().sum())?;
    let x_grad = x.grad(&grads).ok_or("x.grad")?;

    let mut dump = Dump::builder().variant("port").experiment("standalone").metadata("guard_refused", refused).build()?;
    dump.tensor("y.f32", y.clone())?
        .tensor("x.f64", x64.clone() * 3.0)?
        .tensor("ids.i64", ids)?
        .tensor("mask.bool", mask)?
        .tensor("y.bf16", y.clone().cast(FloatDType::BF16))?
        .tensor("y.f16", y.cast(FloatDType::F16))?
        .tensor("x.grad", x_grad)?;
    let path = dump.write(&out)?;
    println!("wrote {} ({} tensors, backend {})", path.display(), dump.len(), dump.metadata()["backend"]);
    println!("recorded {}", record(&out, &device)?.display());
    Ok(())
}
