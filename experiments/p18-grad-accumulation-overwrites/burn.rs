//! p18: gradient accumulation over micro-batches. PyTorch's `.grad` sums across backward calls;
//! burn's `backward()` returns a fresh `Gradients` each time, so a direct port steps with the
//! last micro-batch's gradient only. `GradientsAccumulator` sums them.
use burn::nn::loss::{MseLoss, Reduction};
use burn::nn::Linear;
use burn::optim::{GradientsAccumulator, GradientsParams, SgdConfig};
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, linear, tensor, values};

// book:begin setup
const BATCH: usize = 4;
const ACCUM: usize = 2; // micro-batches per optimizer step, BATCH / ACCUM samples each
const LR: f64 = 0.1;
const WEIGHT: [f32; 3] = [0.5, -0.25, 0.75];
const BIAS: [f32; 1] = [0.1];
const TARGETS: [f32; BATCH] = [1.0, 0.0, -1.0, 2.0];
// book:end

fn mse(model: &Linear, x: Tensor<2>, y: Tensor<2>) -> Tensor<1> {
    MseLoss::new().forward(model.forward(x), y, Reduction::Mean)
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device();
    let inputs = ramp(12, 0);
    let input_sha256 = inputs_sha256(&[&inputs, &TARGETS, &WEIGHT, &BIAS]);
    let model = linear(&WEIGHT, [3, 1], &BIAS, &device); // burn layout [in, out]
    let x = tensor(&inputs, [BATCH, 3], &device);
    let y = tensor(&TARGETS, [BATCH, 1], &device);
    let mut optim = SgdConfig::new().init();
    let micro_batches = || x.clone().chunk(ACCUM, 0).into_iter().zip(y.clone().chunk(ACCUM, 0));

    let grads = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let mut grads = GradientsParams::new();
            for (x_mb, y_mb) in micro_batches() {
                let loss = mse(&model, x_mb, y_mb).div_scalar(ACCUM as f64);
                grads = GradientsParams::from_grads(loss.backward(), &model); // PyTorch: loss.backward()
            }
            // book:end
            grads
        }
        "fixed" => {
            // book:begin fixed
            let mut accumulator = GradientsAccumulator::new();
            for (x_mb, y_mb) in micro_batches() {
                let loss = mse(&model, x_mb, y_mb).div_scalar(ACCUM as f64);
                accumulator.accumulate(&model, GradientsParams::from_grads(loss.backward(), &model));
            }
            let grads = accumulator.grads();
            // book:end
            grads
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let weight_grad = grads.get::<2>(model.weight.id).expect("weight.grad");
    let bias_grad = grads.get::<1>(model.bias.as_ref().unwrap().id).expect("bias.grad");
    // book:begin step
    let model = optim.step(LR, model, grads);
    // book:end
    let (weight, bias) = (model.weight.val(), model.bias.as_ref().unwrap().val());
    println!("weight.grad {:?} bias.grad {:?}", values(weight_grad.clone()), values(bias_grad.clone()));
    println!("weight after step {:?} bias {:?}", values(weight.clone()), values(bias.clone()));

    let mut dump = dump_builder("p18", &args.variant, &input_sha256, &device)
        .metadata("batch_size", BATCH)
        .metadata("micro_batches", ACCUM).build()?;
    dump.tensor("weight.grad", weight_grad)?
        .tensor("bias.grad", bias_grad)?
        .tensor("weight.step1", weight)?
        .tensor("bias.step1", bias)?;
    dump.write(&args.out)?;
    Ok(())
}
