//! p11: PyTorch's BCEWithLogitsLoss ported as `BinaryCrossEntropyLossConfig::new()`, whose
//! `logits` flag defaults to false: burn then treats the logits as probabilities.
use burn::nn::loss::BinaryCrossEntropyLossConfig;
use burn::tensor::{Int, Tensor};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita::loss_guard::binary_cross_entropy;
use pita_lab::{device, tensor, values};

// book:begin setup
const TARGETS: [i64; 6] = [0, 1, 1, 0, 1, 0];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "guard"]);
    let device = device();
    let inside = ramp(6, 6); // logits that happen to lie in (0, 1)
    let mixed = ramp(6, 3); // logits on both sides of 0
    let targets_f32 = TARGETS.map(|t| t as f32);
    let input_sha256 = inputs_sha256(&[&inside, &mixed, &targets_f32]);

    let mut dump = dump_builder("p11", &args.variant, &input_sha256, &device).build()?;
    for (name, logit_values) in [("inside", &inside), ("mixed", &mixed)] {
        let logits = tensor(logit_values, [6], &device).require_grad();
        let targets = Tensor::<1, Int>::from_ints(TARGETS, &device);
        println!("{name} logits {:?}", values(logits.clone()));
        let loss = match args.variant.as_str() {
            "port" => {
                // book:begin port
                let bce = BinaryCrossEntropyLossConfig::new().init(&device);
                let loss = bce.forward(logits.clone(), targets);
                // book:end
                loss
            }
            "fixed" => {
                // book:begin fixed
                let bce = BinaryCrossEntropyLossConfig::new().with_logits(true).init(&device);
                let loss = bce.forward(logits.clone(), targets);
                // book:end
                loss
            }
            "guard" => {
                // book:begin guard
                let bce = BinaryCrossEntropyLossConfig::new().init(&device);
                let loss = binary_cross_entropy(&bce, logits.clone(), targets);
                // book:end
                loss
            }
            _ => unreachable!("Args::parse accepts only the listed variants"),
        };
        let grads = loss.backward();
        let grad = logits.grad(&grads).expect("logits.grad");
        println!("{name} loss {:?}", values(loss.clone()));
        println!("{name} logits.grad {:?}", values(grad.clone()));
        dump.tensor(&format!("{name}.loss"), loss)?.tensor(&format!("{name}.logits.grad"), grad)?;
    }
    dump.write(&args.out)?;
    Ok(())
}
