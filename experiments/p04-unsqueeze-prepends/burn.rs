//! p04: a [B, 1] prediction and a [B] target. burn's `argmax(1)` keeps dim 1, and `unsqueeze()`
//! prepends dims, so the port that makes the ranks agree compares [B, 1] with [1, B]: it broadcasts
//! to [B, B] without a word.
use burn::nn::loss::{MseLoss, Reduction};
use burn::tensor::{Int, Tensor, TensorData};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita::same_shape::mse_loss;
use pita_lab::{device, tensor, values};

// book:begin setup
const BATCH: usize = 4;
const LOGITS: [[f32; 3]; BATCH] = [[0.3, 0.1, -0.2], [0.0, 0.4, 0.1], [-0.1, 0.2, 0.5], [0.2, 0.1, 0.0]];
const CLASSES: [i64; BATCH] = [0, 1, 2, 1];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed", "guard"]);
    let device = device();
    let (pred_values, target_values) = (ramp(BATCH, 0), ramp(BATCH, BATCH));
    let logit_values: Vec<f32> = LOGITS.iter().flatten().copied().collect();
    let class_values: Vec<f32> = CLASSES.iter().map(|&c| c as f32).collect();
    let input_sha256 = inputs_sha256(&[&pred_values, &target_values, &logit_values, &class_values]);
    // book:begin inputs
    let pred = tensor(&pred_values, [BATCH, 1], &device); // a regression head's output, [4, 1]
    let y = tensor(&target_values, [BATCH], &device); // [4]
    // book:end
    let logits = tensor(&logit_values, [BATCH, 3], &device);
    let classes = Tensor::<1, Int>::from_data(TensorData::new(CLASSES.to_vec(), [BATCH]), &device);

    let (loss, accuracy) = match args.variant.as_str() {
        "port" => {
            // `MseLoss::forward(pred, y, ..)` does not compile: Tensor<2> against Tensor<1>.
            // book:begin port
            let y = y.unsqueeze::<2>(); // makes the ranks agree: [1, 4]
            let loss = MseLoss::new().forward(pred.clone(), y.clone(), Reduction::Mean);
            let hits = logits.argmax(1).equal(classes.unsqueeze::<2>()); // [4, 1] == [1, 4]
            // book:end
            println!("port y {:?}, pred - y {:?}, hits {:?}", y.dims(), (pred - y).dims(), hits.dims());
            (loss, hits.float().mean())
        }
        "fixed" => {
            // book:begin fixed
            let y = y.unsqueeze_dim::<2>(1); // [4, 1], like torch's y.unsqueeze(1)
            let loss = MseLoss::new().forward(pred.clone(), y.clone(), Reduction::Mean);
            let hits = logits.argmax(1).squeeze_dim::<1>(1).equal(classes); // [4] == [4]
            // book:end
            println!("fixed y {:?}, pred - y {:?}, hits {:?}", y.dims(), (pred - y).dims(), hits.dims());
            (loss, hits.float().mean())
        }
        "guard" => {
            // book:begin guard
            let loss = mse_loss(pred, y.unsqueeze::<2>()); // [4, 1] against [1, 4]
            // book:end
            unreachable!("the guard panics before returning {loss:?}")
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("{} loss {:?}", args.variant, values(loss.clone()));
    println!("{} accuracy {:?}", args.variant, values(accuracy.clone()));

    let mut dump = dump_builder("p04", &args.variant, &input_sha256, &device).metadata("batch_size", BATCH).build()?;
    dump.tensor("loss", loss)?.tensor("accuracy", accuracy)?;
    dump.write(&args.out)?;
    Ok(())
}
