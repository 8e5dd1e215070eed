//! p10n: burn's GroupNorm on a float16 input with 65 536 values per group (tracel-ai/burn#5382),
//! against PyTorch's GroupNorm in float16 and float32; and the statistics written as the report
//! describes the old code (a sum, then `div_scalar` by the count) in float16.
use burn::nn::GroupNormConfig;
use burn::tensor::{DType, FloatDType};
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const SHAPE: [usize; 4] = [1, 64, 64, 64]; // [N, C, H, W]
const GROUPS: usize = 4; // 64/4 channels × 64 × 64 = 65 536 values per group
const EPSILON: f64 = 1e-5; // both frameworks' default
/// Value `k` of the input: 0.5, 0.75, … 2.0, repeating; exact in float16 and float32.
fn input_value(k: usize) -> f32 {
    0.5 + 0.25 * (k % 7) as f32
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["f16", "f32", "sum-div"]);
    let device = device();
    let image: Vec<f32> = (0..SHAPE.iter().product()).map(input_value).collect();
    let input_sha256 = inputs_sha256(&[&image]);
    let x = tensor(&image, SHAPE, &device);
    let norm = GroupNormConfig::new(GROUPS, SHAPE[1]).with_epsilon(EPSILON).with_affine(false).init(&device);
    let out = match args.variant.as_str() {
        "f16" => {
            // book:begin port
            let x = x.cast(FloatDType::F16);
            let out = norm.forward(x);
            // book:end
            out
        }
        "f32" => norm.forward(x),
        "sum-div" => {
            // book:begin sum_div
            let x = x.cast(FloatDType::F16);
            let count = (SHAPE[1] / GROUPS * SHAPE[2] * SHAPE[3]) as f64;
            let grouped = x.reshape([SHAPE[0], GROUPS, SHAPE[1] / GROUPS * SHAPE[2] * SHAPE[3]]);
            let sum = grouped.clone().sum_dim(2);
            let mean = sum.clone().div_scalar(count);
            let centered = grouped.sub(mean.clone());
            let var = centered.clone().square().sum_dim(2).div_scalar(count);
            let out = centered.div(var.clone().add_scalar(EPSILON).sqrt()).reshape(SHAPE);
            // book:end
            let count_f16 = tensor(&[count as f32], [1], &device).cast(FloatDType::F16); // the count as a float16 holds it
            println!("count {count} as float16: {:?}", values(count_f16));
            println!("group sums {:?}", values(sum));
            println!("group means {:?}", values(mean));
            println!("group variances {:?}", values(var));
            out
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let dtype = out.dtype();
    let max_abs: f32 = out.clone().abs().max().cast(FloatDType::F32).into_scalar();
    let first: Vec<f32> = values(out.clone().slice([0..1, 0..1, 0..1, 0..7])); // one period of the input
    println!("output dtype {dtype:?}; max |out| {max_abs}; first values {first:?}");
    assert!(dtype == DType::F16 || args.variant == "f32", "{dtype:?}");
    let mut dump = dump_builder("p10n", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("out", out.clone())?;
    dump.tensor("out.first", out.slice([0..1, 0..1, 0..1, 0..7]))?;
    dump.write(&args.out)?;
    Ok(())
}
