//! p10o: PyTorch's `mode="nearest-exact"` (half-pixel rounding) against burn's nearest modes on a
//! 3×3 → 5×5 resize. burn's `Nearest` is PyTorch's `"nearest"` (floor); `NearestExact` is in the
//! enums, and the backend decides whether it runs.
use burn::nn::interpolate::{Interpolate2dConfig, InterpolateMode};
use burn::tensor::{Device, Int, Tensor, TensorData};
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const IMAGE: [f32; 9] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]; // one channel, 3×3
const SIZE: [usize; 2] = [5, 5];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["nearest", "exact", "fixed"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&IMAGE]);
    let x = tensor(&IMAGE, [1, 1, 3, 3], &device); // [N, C, H, W]
    let out = match args.variant.as_str() {
        "nearest" => {
            // book:begin nearest
            let resize = Interpolate2dConfig::new()
                .with_output_size(Some(SIZE))
                .with_mode(InterpolateMode::Nearest)
                .init();
            let out = resize.forward(x);
            // book:end
            out
        }
        "exact" => {
            let nearest_exact = pita_lab::compat::nearest_exact_mode(); // InterpolateMode::NearestExact (absent from burn 0.21)
            // book:begin exact
            let resize = Interpolate2dConfig::new()
                .with_output_size(Some(SIZE))
                .with_mode(nearest_exact)
                .init();
            let out = resize.forward(x);
            // book:end
            out
        }
        "fixed" => nearest_exact(x, SIZE),
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    for row in values(out.clone()).chunks(SIZE[1]) {
        println!("out row {row:?}");
    }
    let mut dump = dump_builder("p10o", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("out", out)?;
    dump.write(&args.out)?;
    Ok(())
}

// book:begin fixed
/// PyTorch's `F.interpolate(x, size, mode="nearest-exact")` on `[N, C, H, W]`: output pixel `o`
/// takes input pixel `min(floor((o + 0.5) · in/out), in − 1)`, on each axis. Written with
/// `select`, which any backend runs (and differentiates).
fn nearest_exact(x: Tensor<4>, size: [usize; 2]) -> Tensor<4> {
    let [_, _, height, width] = x.dims();
    let device = x.device();
    let rows = exact_indices(height, size[0], &device);
    let cols = exact_indices(width, size[1], &device);
    x.select(2, rows).select(3, cols)
}

fn exact_indices(in_size: usize, out_size: usize, device: &Device) -> Tensor<1, Int> {
    let scale = in_size as f32 / out_size as f32; // PyTorch computes the scale in float32
    let indices: Vec<i64> = (0..out_size)
        .map(|o| (((o as f32 + 0.5) * scale).floor() as i64).min(in_size as i64 - 1))
        .collect();
    Tensor::from_data(TensorData::new(indices, [out_size]), device)
}
// book:end
