//! p11e: soft targets for binary cross-entropy. burn's `BinaryCrossEntropyLoss::forward` takes
//! `Tensor<D, Int>` targets; the port that casts 0.9 with `.int()` trains on 0.
use burn::nn::loss::BinaryCrossEntropyLossConfig;
use burn::tensor::{Int, Tensor};
use pita::bce_targets::{binary_cross_entropy_with_logits, hard_targets};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const SMOOTH: [f32; 6] = [0.1, 0.9, 0.9, 0.1, 0.9, 0.1]; // labels [0, 1, 1, 0, 1, 0], smoothed
const TEACHER: [f32; 6] = [0.2, 0.7, 0.55, 0.05, 0.95, 0.4]; // a teacher's probabilities
// book:end
// book:begin smoothing_setup
const LABELS: [i64; 6] = [0, 1, 1, 0, 1, 0];
const ALPHA: f32 = 0.2; // burn: y·(1 − α) + α/2 for 1-D targets, i.e. 0.1 / 0.9
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "smoothing", "fixed", "guard"]);
    let device = device();
    let logit_values = ramp(6, 3); // -0.2 … 0.3
    let input_sha256 = inputs_sha256(&[&logit_values, &SMOOTH, &TEACHER]);

    let mut dump = dump_builder("p11e", &args.variant, &input_sha256, &device).build()?;
    for (case, target_values) in [("smooth", SMOOTH), ("distill", TEACHER)] {
        let logits = tensor(&logit_values, [6], &device).require_grad();
        let soft_targets = tensor(&target_values, [6], &device);
        // The targets the loss used, as floats (None where the variant has no such tensor).
        let (used, loss) = match args.variant.as_str() {
            "port" => {
                // book:begin port
                let bce = BinaryCrossEntropyLossConfig::new().with_logits(true).init(&device);
                let targets = soft_targets.int(); // forward takes Tensor<1, Int>
                let loss = bce.forward(logits.clone(), targets.clone());
                // book:end
                (Some(targets.float()), loss)
            }
            "smoothing" if case == "smooth" => {
                // book:begin smoothing
                let bce = BinaryCrossEntropyLossConfig::new()
                    .with_logits(true)
                    .with_smoothing(Some(ALPHA))
                    .init(&device);
                let labels = Tensor::<1, Int>::from_ints(LABELS, &device);
                let loss = bce.forward(logits.clone(), labels);
                // book:end
                (None, loss)
            }
            "smoothing" => {
                println!("{case}: a teacher's probabilities are not smoothed hard labels; skipped");
                continue;
            }
            "fixed" => {
                // book:begin fixed
                let loss = binary_cross_entropy_with_logits(logits.clone(), soft_targets.clone());
                // book:end
                (Some(soft_targets), loss)
            }
            "guard" => {
                // book:begin guard
                let bce = BinaryCrossEntropyLossConfig::new().with_logits(true).init(&device);
                let targets = hard_targets(soft_targets); // instead of .int()
                let loss = bce.forward(logits.clone(), targets.clone());
                // book:end
                (Some(targets.float()), loss)
            }
            _ => unreachable!("Args::parse accepts only the listed variants"),
        };
        let grads = loss.backward();
        let grad = logits.grad(&grads).expect("logits.grad");
        if let Some(used) = used {
            println!("{case} targets {:?}", values(used.clone()));
            dump.tensor(&format!("{case}.target"), used)?;
        }
        println!("{case} loss {:?}", values(loss.clone()));
        println!("{case} logits.grad {:?}", values(grad.clone()));
        dump.tensor(&format!("{case}.loss"), loss)?.tensor(&format!("{case}.logits.grad"), grad)?;
    }
    dump.write(&args.out)?;
    Ok(())
}
