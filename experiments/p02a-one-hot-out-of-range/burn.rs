//! p02a: `one_hot` on labels that are not classes. burn 0.22.1 wraps a label in [-C, 0) to class
//! C + label (the last class for -1), where `F.one_hot` raises; a label below -C reaches the
//! backend's scatter as a negative index and panics there; a label >= C panics in `one_hot`'s check.
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, dump_builder, tensor, values};

// book:begin setup
const NUM_CLASSES: usize = 4;
const IGNORE_1: [i64; 6] = [2, 0, -1, 1, 3, -1];
const IGNORE_100: [i64; 6] = [2, 0, -100, 1, 3, -100];
const TOO_LARGE: [i64; 6] = [2, 0, 4, 1, 3, 4];
// book:end

fn ints(values: &[i64], device: &Device) -> Tensor<1, Int> {
    Tensor::from_data(TensorData::new(values.to_vec(), [values.len()]), device)
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "port-100", "port-too-large", "fixed"]);
    let device = device();
    let label_values: &[i64] = match args.variant.as_str() {
        "port-100" => &IGNORE_100,
        "port-too-large" => &TOO_LARGE,
        _ => &IGNORE_1,
    };
    let logit_values = ramp(24, 0);
    let as_f32: Vec<f32> = label_values.iter().map(|&label| label as f32).collect();
    let input_sha256 = inputs_sha256(&[&as_f32, &logit_values]);
    let labels = ints(label_values, &device);
    let logits: Tensor<2> = tensor(&logit_values, [6, NUM_CLASSES], &device);
    println!("labels {label_values:?}");

    let target: Tensor<2> = if args.variant == "fixed" {
        // book:begin fixed
        let valid = labels.clone().greater_equal_elem(0).float().unsqueeze_dim::<2>(1);
        let target = labels.clone().clamp_min(0).one_hot::<2>(NUM_CLASSES).float() * valid;
        // book:end
        target
    } else {
        // book:begin port
        let target = labels.clone().one_hot::<2>(NUM_CLASSES).float();
        // book:end
        target
    };
    // book:begin loss
    let loss = -(target.clone() * log_softmax(logits, 1)).sum() / target.clone().sum();
    // book:end
    let rows: Vec<Vec<i64>> = values(target.clone()).chunks(NUM_CLASSES).map(|row| row.iter().map(|&v| v as i64).collect()).collect();
    println!("target rows {rows:?}");
    println!("loss {}", values(loss.clone())[0]);

    let mut dump = dump_builder("p02a", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("labels", labels.float())?.tensor("target", target)?.tensor("loss", loss)?;
    dump.write(&args.out)?;
    Ok(())
}
