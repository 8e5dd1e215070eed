//! p11b: PyTorch's `cross_entropy(..., ignore_index=PAD)` ported with burn's `pad_tokens`.
//! burn 0.22.1 divides by the number of non-pad rows (and by their weights), like PyTorch.
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::tensor::{Int, Tensor};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const BATCH: usize = 4;
const CLASSES: usize = 3;
const TARGETS: [i64; BATCH] = [1, 2, 0, 0]; // class 0 is the padding class
const PAD: usize = 0;
const WEIGHTS: [f32; CLASSES] = [1.0, 2.0, 3.0];
const SMOOTHING: f32 = 0.1;
// book:end

// book:begin shared_targets
/// A port that maps the padding to class 2, the second row's real target (PyTorch's `ignore_index`
/// is often -100, and `pad_tokens` takes only a class index).
const TAKEN: usize = 2;

fn port_targets(variant: &str) -> [i64; BATCH] {
    match variant {
        "shared" => TARGETS.map(|t| if t == PAD as i64 { TAKEN as i64 } else { t }),
        _ => TARGETS,
    }
}
// book:end

fn loss_fn(name: &str, variant: &str, device: &burn::tensor::Device) -> CrossEntropyLoss {
    let config = match name {
        "plain" => CrossEntropyLossConfig::new(),
        "weighted" => CrossEntropyLossConfig::new().with_weights(Some(WEIGHTS.to_vec())),
        "smoothed" => CrossEntropyLossConfig::new().with_smoothing(Some(SMOOTHING)),
        _ => unreachable!(),
    };
    match variant {
        // book:begin port
        "port" => config.with_pad_tokens(Some(vec![PAD])).init(device),
        // book:end
        // book:begin nopad
        "nopad" => config.init(device), // forgot the padding: pad rows count as class 0
        // book:end
        // book:begin shared
        "shared" => config.with_pad_tokens(Some(vec![TAKEN])).init(device), // masks the second row as well
        // book:end
        _ => unreachable!("Args::parse accepts only the listed variants"),
    }
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "nopad", "shared"]);
    let device = device();
    let logits_values = ramp(BATCH * CLASSES, 0);
    let targets_f32 = TARGETS.map(|t| t as f32);
    let input_sha256 = inputs_sha256(&[&logits_values, &targets_f32, &WEIGHTS, &[SMOOTHING]]);
    let mut dump = dump_builder("p11b", &args.variant, &input_sha256, &device).metadata("batch_size", BATCH).build()?;
    for name in ["plain", "weighted", "smoothed"] {
        let logits = tensor(&logits_values, [BATCH, CLASSES], &device).require_grad();
        let targets = Tensor::<1, Int>::from_ints(port_targets(&args.variant), &device);
        let ce = loss_fn(name, &args.variant, &device);
        let loss = ce.forward(logits.clone(), targets);
        let grads = loss.backward();
        let grad = logits.grad(&grads).expect("logits.grad");
        println!("{name} loss {:?}", values(loss.clone()));
        println!("{name} logits.grad {:?}", values(grad.clone()));
        dump.tensor(&format!("{name}.loss"), loss)?.tensor(&format!("{name}.logits.grad"), grad)?;
    }
    dump.write(&args.out)?;
    Ok(())
}
