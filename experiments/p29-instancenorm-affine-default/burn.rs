//! p29: Linear + InstanceNorm trained for two SGD steps. burn's `InstanceNormConfig` is affine by
//! default (learnable gamma and beta); PyTorch's `InstanceNorm1d` is not.
use burn::module::{Module, Param};
use burn::nn::{InstanceNorm, InstanceNormConfig, Linear};
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Tensor};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const CHANNELS: usize = 2;
const LENGTH: usize = 4;
const LR: f64 = 0.1;
const STEPS: usize = 2;
const WEIGHT: [f32; 16] = [0.5, -0.25, 0.75, 0.0, 0.25, 1.0, -0.5, 0.5, -0.75, 0.5, 0.25, 1.0, 1.0, 0.0, -0.25, -0.5]; // [out, in]
const BIAS: [f32; 4] = [0.125, -0.25, 0.375, 0.0];
// book:end

#[derive(Module, Debug)]
struct Net {
    fc: Linear,
    norm: InstanceNorm,
}

impl Net {
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.norm.forward(self.fc.forward(x))
    }
}

fn net(norm: InstanceNorm, weight: &[f32], bias: &[f32], device: &Device) -> Net {
    // PyTorch's [out, in] weight, transposed into burn's [in, out].
    let fc = Linear {
        weight: Param::from_tensor(tensor(weight, [LENGTH, LENGTH], device).transpose()),
        bias: Some(Param::from_tensor(tensor(bias, [LENGTH], device))),
    };
    Net { fc, norm }
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device();
    let inputs = ramp(8, 0);
    let targets = ramp(8, 8);
    let input_sha256 = inputs_sha256(&[&inputs, &targets, &WEIGHT, &BIAS]);
    let norm = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let norm = InstanceNormConfig::new(CHANNELS).init(&device); // affine: default
            // book:end
            norm
        }
        "fixed" => {
            // book:begin fixed
            let norm = InstanceNormConfig::new(CHANNELS).with_affine(false).init(&device);
            // book:end
            norm
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let mut model = net(norm, &WEIGHT, &BIAS, &device);
    let norm_params = model.norm.num_params();
    let affine = model.norm.affine; // as the layer holds it, for the defaults table
    println!("norm parameters {norm_params}");
    let x = tensor(&inputs, [1, CHANNELS, LENGTH], &device);
    let c = tensor(&targets, [1, CHANNELS, LENGTH], &device);

    let mut optimizer = SgdConfig::new().init();
    let out0 = model.forward(x.clone()).detach();
    // book:begin train
    for _ in 0..STEPS {
        let loss = (model.forward(x.clone()) * c.clone()).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(LR, model, grads);
    }
    // book:end
    let out2 = model.forward(x).detach();
    if let (Some(gamma), Some(beta)) = (&model.norm.gamma, &model.norm.beta) {
        println!("norm.gamma {:?} norm.beta {:?}", values(gamma.val()), values(beta.val()));
    }
    println!("out.step0 {:?}", values(out0.clone()));
    println!("out.step{STEPS} {:?}", values(out2.clone()));

    let mut dump = dump_builder("p29", &args.variant, &input_sha256, &device)
        .metadata("norm_params", norm_params)
        .metadata("affine", affine)
        .metadata("lr", LR)
        .metadata("steps", STEPS).build()?;
    // fc.weight back in PyTorch's [out, in] layout, so the two dumps line up.
    dump.tensor("out.step0", out0)?
        .tensor(&format!("out.step{STEPS}"), out2)?
        .tensor("fc.weight", model.fc.weight.val().transpose())?;
    dump.write(&args.out)?;
    Ok(())
}
