//! p11f: class probabilities as the cross-entropy target. burn's `CrossEntropyLoss::forward` takes
//! `Tensor<1, Int>` class indices; the port that takes each row's argmax trains on hard labels.
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::loss::cross_entropy_with_logits;
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const B: usize = 4;
const C: usize = 3;
const TARGET: [f32; B * C] = [
    0.7, 0.3, 0.0, // mixup: 0.7 · class 0 + 0.3 · class 1
    0.0, 0.7, 0.3, //
    0.3, 0.0, 0.7, //
    0.1, 0.1, 0.8, // class 2, smoothed
];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fixed"]);
    let device = device();
    let logit_values = ramp(B * C, 0);
    let input_sha256 = inputs_sha256(&[&logit_values, &TARGET]);
    let logits = tensor(&logit_values, [B, C], &device).require_grad();
    let target = tensor(&TARGET, [B, C], &device);
    // The target the loss used, as probabilities.
    let (used, loss): (Tensor<2>, Tensor<1>) = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let ce = CrossEntropyLossConfig::new().init(&device);
            let labels = target.clone().argmax(1).squeeze_dim::<1>(1); // forward takes Tensor<1, Int>
            let loss = ce.forward(logits.clone(), labels.clone());
            // book:end
            (labels.one_hot::<2>(C).float(), loss)
        }
        "fixed" => {
            // book:begin fixed
            let loss = cross_entropy_with_logits(logits.clone(), target.clone());
            // book:end
            (target, loss)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let grads = loss.backward();
    let grad = logits.grad(&grads).expect("logits.grad");
    println!("target {:?}", values(used.clone()));
    println!("loss {:?}", values(loss.clone()));
    println!("logits.grad {:?}", values(grad.clone()));
    let mut dump = dump_builder("p11f", &args.variant, &input_sha256, &device).metadata("batch_size", B).build()?;
    dump.tensor("target", used)?.tensor("loss", loss)?.tensor("logits.grad", grad)?;
    dump.write(&args.out)?;
    Ok(())
}
