//! p29b: Linear + BatchNorm trained for a few SGD steps. PyTorch's `BatchNorm1d(affine=False)` has
//! no parameters; burn's BatchNorm always has a learnable gamma (1) and beta (0): the same output
//! at initialisation, different once SGD has moved them (`port`). Fix: stop their gradients with
//! `no_grad()` (`fixed`); `freeze()` also turns the layer's training path off (`freeze`).
use burn::module::{Module, Param};
use burn::nn::{BatchNorm, BatchNormConfig, Linear};
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Tensor};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const BATCH: usize = 4;
const FEATURES: usize = 2;
const LR: f64 = 0.1;
const STEPS: usize = 2;
const WEIGHT: [f32; 4] = [0.5, -0.25, 0.75, 1.0]; // fc: [out, in]
const BIAS: [f32; 2] = [0.125, -0.25];
// book:end

#[derive(Module, Debug)]
struct Net {
    fc: Linear,
    norm: BatchNorm,
}

impl Net {
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        self.norm.forward(self.fc.forward(x))
    }
}

fn net(norm: BatchNorm, device: &Device) -> Net {
    // PyTorch's [out, in] weight, transposed into burn's [in, out].
    let fc = Linear {
        weight: Param::from_tensor(tensor(&WEIGHT, [FEATURES, FEATURES], device).transpose()),
        bias: Some(Param::from_tensor(tensor(&BIAS, [FEATURES], device))),
    };
    Net { fc, norm }
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "freeze"]);
    let device = device(); // Flex wrapped in Autodiff: the training device
    let inputs = ramp(8, 0);
    let targets = ramp(8, 8);
    let input_sha256 = inputs_sha256(&[&inputs, &targets, &WEIGHT, &BIAS]);
    let norm = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let norm = BatchNormConfig::new(FEATURES).init(&device); // gamma 1, beta 0: learnable
            // book:end
            norm
        }
        "fixed" => {
            // book:begin fixed
            let norm = BatchNormConfig::new(FEATURES).init(&device).no_grad(); // gamma, beta: no gradients
            // book:end
            norm
        }
        "freeze" => {
            // book:begin freeze
            let norm = BatchNormConfig::new(FEATURES).init(&device).freeze(); // no gradients, and no training path
            // book:end
            norm
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let mut model = net(norm, &device);
    let norm_state = model.norm.num_params(); // gamma, beta and the running statistics
    println!("norm parameters with running statistics {norm_state}");
    let x = tensor(&inputs, [BATCH, FEATURES], &device);
    let c = tensor(&targets, [BATCH, FEATURES], &device);

    let mut optimizer = SgdConfig::new().init();
    let out0 = model.forward(x.clone()).detach(); // training path: batch statistics
    // book:begin train
    for _ in 0..STEPS {
        let loss = (model.forward(x.clone()) * c.clone()).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(LR, model, grads);
    }
    // book:end
    let out_k = model.forward(x).detach();
    println!("norm.gamma {:?} norm.beta {:?}", values(model.norm.gamma.val()), values(model.norm.beta.val()));
    println!("out.step0 {:?}", values(out0.clone()));
    println!("out.step{STEPS} {:?}", values(out_k.clone()));

    let mut dump = dump_builder("p29b", &args.variant, &input_sha256, &device)
        .metadata("norm_state", norm_state)
        .metadata("lr", LR)
        .metadata("steps", STEPS).build()?;
    // fc.weight back in PyTorch's [out, in] layout, so the two dumps line up.
    dump.tensor("out.step0", out0)?
        .tensor(&format!("out.step{STEPS}"), out_k)?
        .tensor("fc.weight", model.fc.weight.val().transpose())?;
    dump.write(&args.out)?;
    Ok(())
}
