//! p20b: a bias in front of a batch normalisation has a gradient that is zero in exact arithmetic;
//! in float32 it is rounding noise, different on each side. AdamW divides each gradient by its own
//! root mean square, so that noise becomes a step of about lr, with a sign of its own on each side.
//! Both ports are right: this program is PyTorch's model and optimizer, as it should be ported.
use burn::module::{Module, Param};
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::Linear;
use burn::optim::{AdamWConfig, GradientsParams};
use burn::tensor::{Device, Tensor};
use pita::record::{tap, Recorder};
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, dump_builder, tensor, values};

// book:begin setup
const BATCH: usize = 8;
const D: usize = 4;
const LR: f64 = 1e-3;
// book:end

/// n exact values in [-0.5, 0.5] (multiples of 1/16), in no linear order (pytorch.py's `pattern`).
fn pattern(n: usize, salt: usize) -> Vec<f32> {
    (0..n).map(|k| ((k * 7 + salt) % 17) as f32 * 0.0625 - 0.5).collect()
}

// book:begin model
#[derive(Module, Debug)]
struct Net {
    fc: Linear,
}

impl Net {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let z = self.fc.forward(x);
        tap("fc", &z);
        // PyTorch's BatchNorm1d(affine=False, track_running_stats=False): the batch's own statistics
        let centered = z.clone() - z.clone().mean_dim(0);
        let out = centered / z.var_bias(0).add_scalar(1e-5).sqrt();
        tap("bn", &out);
        out
    }
}
// book:end

fn net(weight: &[f32], bias: Option<&[f32]>, device: &Device) -> Net {
    // PyTorch's [out, in] weight, transposed into burn's [in, out].
    let fc = Linear {
        weight: Param::from_tensor(tensor(weight, [D, D], device).transpose()),
        bias: bias.map(|b| Param::from_tensor(tensor(b, [D], device))),
    };
    Net { fc }
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "nobias", "decay-default"]);
    let device = device();
    let inputs = pattern(BATCH * D, 0);
    let targets = ramp(BATCH * D, 0);
    let weight = pattern(D * D, 3);
    let bias = pattern(D, 5);
    let input_sha256 = inputs_sha256(&[&inputs, &targets, &weight, &bias]);
    let model = net(&weight, (args.variant != "nobias").then_some(bias.as_slice()), &device);
    let config = match args.variant.as_str() {
        "port" | "nobias" => {
            // book:begin port
            let config = AdamWConfig::new().with_epsilon(1e-8).with_weight_decay(1e-2); // torch.optim.AdamW's defaults
            // book:end
            config
        }
        "decay-default" => {
            // book:begin decay_default
            let config = AdamWConfig::new().with_epsilon(1e-8); // pita: allow(p21): weight_decay left at burn's default, on purpose
            // book:end
            config
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let mut optimizer = config.init();
    let x = tensor(&inputs, [BATCH, D], &device);
    let y = tensor(&targets, [BATCH, D], &device);

    // book:begin record
    let mut recorder = Recorder::new().torch_names(true);
    recorder.optimizer(LR, &config)?.loss_fn(&MseLoss::new(), Reduction::Mean)?.params(&model)?;
    let loss = {
        let _listening = recorder.listen();
        MseLoss::new().forward(model.forward(x), y, Reduction::Mean)
    };
    recorder.loss(1, &loss)?;
    let grads = loss.backward();
    recorder.grads(&model, &grads)?;
    let grads = GradientsParams::from_grads(grads, &model);
    let model = optimizer.step(LR, model, grads);
    recorder.step(1, &model)?;
    // book:end
    if let Some(bias) = &model.fc.bias {
        println!("step1 fc.bias {:?}", values(bias.val()));
    }
    println!("loss {:?}", values(loss));
    recorder.into_dump(dump_builder("p20b", &args.variant, &input_sha256, &device))?.write(&args.out)?;
    Ok(())
}
