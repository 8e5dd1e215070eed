//! Guide 「怎么读这一卷」, burn side: the input ramp and its hash, burn's own sum and mean of it
//! (`ramp`), a port that forgot the 1/B of the mean (`forgot-mean`), and the same f32
//! arithmetic as pytorch.py in the same orders (`orders`).
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

/// The ramp's length.
const N: usize = 12;
/// `batch_mean` reads the ramp as 4 samples of 3 features.
const BATCH: usize = 4;

// book:begin orders
fn sum_forward(values: &[f32]) -> f32 {
    values.iter().fold(0.0, |total, &value| total + value) // ((x0 + x1) + x2) + …
}

fn sum_reverse(values: &[f32]) -> f32 {
    values.iter().rev().fold(0.0, |total, &value| total + value)
}

fn sum_pairwise(values: &[f32]) -> f32 {
    if values.len() == 1 {
        return values[0];
    }
    let (left, right) = values.split_at(values.len() / 2);
    sum_pairwise(left) + sum_pairwise(right)
}

fn sum_f64(values: &[f32]) -> f32 {
    values.iter().fold(0.0f64, |total, &value| total + value as f64) as f32
}
// book:end

// book:begin placement
fn mean_sum_times_inv(values: &[f32]) -> f32 {
    sum_forward(values) * (1.0 / values.len() as f32)
}

fn mean_each_times_inv(values: &[f32]) -> f32 {
    let inv = 1.0 / values.len() as f32;
    values.iter().fold(0.0, |total, &value| total + value * inv)
}

fn mean_sum_div(values: &[f32]) -> f32 {
    sum_forward(values) / values.len() as f32
}
// book:end

/// a, b, c for a·b + c, taken from the ramp: b is it reversed, c it rotated by one.
fn fma_operands(x: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut c = x.to_vec();
    c.rotate_right(1);
    (x.to_vec(), x.iter().rev().copied().collect(), c)
}

// book:begin fma
fn fma_fused(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c) // one rounding
}

fn fma_unfused(a: f32, b: f32, c: f32) -> f32 {
    a * b + c // two roundings: Rust never fuses these on its own
}
// book:end

/// The `orders` dump's tensors: each name with its values.
fn orders(x: &[f32]) -> Vec<(&'static str, Vec<f32>)> {
    let (a, b, c) = fma_operands(x);
    let elementwise = |op: fn(f32, f32, f32) -> f32| (0..a.len()).map(|i| op(a[i], b[i], c[i])).collect::<Vec<f32>>();
    vec![
        ("sum.forward", vec![sum_forward(x)]),
        ("sum.reverse", vec![sum_reverse(x)]),
        ("sum.pairwise", vec![sum_pairwise(x)]),
        ("sum.f64", vec![sum_f64(x)]),
        ("mean.sum_times_inv", vec![mean_sum_times_inv(x)]),
        ("mean.each_times_inv", vec![mean_each_times_inv(x)]),
        ("mean.sum_div", vec![mean_sum_div(x)]),
        ("mean4.sum_times_inv", vec![mean_sum_times_inv(&x[..4])]),
        ("mean4.each_times_inv", vec![mean_each_times_inv(&x[..4])]),
        ("fma.fused", elementwise(fma_fused)),
        ("fma.unfused", elementwise(fma_unfused)),
    ]
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["ramp", "forgot-mean", "orders"]);
    let device = device();
    // book:begin inputs
    let inputs = ramp(N, 0); // 0.1·k − 0.5 for k = 0..11, in f64, rounded to f32
    let input_sha256 = inputs_sha256(&[&inputs]); // sha256 of the little-endian f32 bytes
    // book:end
    println!("input_sha256 {input_sha256}");
    let mut dump = dump_builder("reading", &args.variant, &input_sha256, &device)
        .metadata("batch_size", BATCH)
        .build()?;
    if args.variant == "orders" {
        for (name, values) in orders(&inputs) {
            println!("{name} {values:?}");
            let len = values.len();
            dump.tensor(name, tensor(&values, [len], &device))?;
        }
    } else {
        let x = tensor(&inputs, [N], &device);
        // book:begin library
        let sum = x.clone().sum();
        let mean = x.clone().mean();
        let batch_mean = x.clone().reshape([BATCH, N / BATCH]).mean_dim(0).reshape([N / BATCH]); // one mean per feature
        // book:end
        let batch_mean = if args.variant == "forgot-mean" {
            // book:begin forgot
            x.clone().reshape([BATCH, N / BATCH]).sum_dim(0).reshape([N / BATCH]) // the 1/B forgotten
            // book:end
        } else {
            batch_mean
        };
        println!("x {:?}", values(x.clone()));
        println!("sum {:?}", values(sum.clone()));
        println!("mean {:?}", values(mean.clone()));
        println!("batch_mean {:?}", values(batch_mean.clone()));
        dump.tensor("x", x)?.tensor("sum", sum)?.tensor("mean", mean)?.tensor("batch_mean", batch_mean)?;
    }
    dump.write(&args.out)?;
    Ok(())
}
