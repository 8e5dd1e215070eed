//! p10k: `interpolate` with a scale factor whose output size `in·scale` is not a whole number.
//! burn floors the size and then samples with the ratio in/out; PyTorch samples with 1/scale.
use burn::nn::interpolate::{Interpolate2dConfig, InterpolateMode};
use burn::tensor::{Tensor, TensorData};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const UP: f32 = 1.5;
const DOWN: f32 = 0.75;
const MODES: [(&str, InterpolateMode); 3] = [
    ("nearest", InterpolateMode::Nearest),
    ("bilinear", InterpolateMode::Linear),
    ("bicubic", InterpolateMode::Cubic),
];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "size", "fixed"]);
    let device = device();
    let quarter = |values: Vec<f32>| values.into_iter().map(|v| v / 4.0).collect::<Vec<f32>>(); // exact in f32
    let image = quarter(ramp(25, 0)); // one channel, 5×5
    let even = quarter(ramp(16, 0)); // one channel, 4×4
    let input_sha256 = inputs_sha256(&[&image, &even]);
    let cases = [("up", &image, 5, UP), ("down", &image, 5, DOWN), ("even", &even, 4, UP)];

    let mut dump = dump_builder("p10k", &args.variant, &input_sha256, &device).build()?;
    for (case, pixels, side, scale) in cases {
        let x = tensor(pixels, [1, 1, side, side], &device); // [N, C, H, W]
        for (name, mode) in MODES {
            let out = match args.variant.as_str() {
                "port" => {
                    // book:begin port
                    let resize = Interpolate2dConfig::new()
                        .with_scale_factor(Some([scale, scale]))
                        .with_mode(mode)
                        .with_align_corners(false) // p10: burn's default is true
                        .init();
                    let out = resize.forward(x.clone());
                    // book:end
                    out
                }
                "size" => {
                    // book:begin size
                    let size = (side as f64 * scale as f64).floor() as usize; // PyTorch's output size
                    let resize = Interpolate2dConfig::new()
                        .with_output_size(Some([size, size]))
                        .with_mode(mode)
                        .with_align_corners(false)
                        .init();
                    let out = resize.forward(x.clone());
                    // book:end
                    out
                }
                "fixed" => interpolate_like_torch(x.clone(), scale as f64, &mode),
                _ => unreachable!("Args::parse accepts only the listed variants"),
            };
            let [_, _, out_h, out_w] = out.dims();
            let row: Vec<f32> = values(out.clone()).into_iter().take(out_w).collect();
            println!("{name}.{case} [{side}, {side}] -> [{out_h}, {out_w}] row 0 {row:?}");
            dump.tensor(&format!("{name}.{case}"), out)?;
        }
    }
    dump.write(&args.out)?;
    Ok(())
}

// book:begin fixed
/// PyTorch's `F.interpolate(x, scale_factor=scale, mode=…, align_corners=False)` on
/// `[N, C, H, W]`: output size floor(in·scale), output pixel `o` read at `(o + 0.5)/scale − 0.5`
/// (nearest: `floor(o/scale)`). burn's kernels read at in/out steps, so the resampling is
/// written as one matrix per axis: `out = rows · x · colsᵀ`, differentiable like any matmul.
fn interpolate_like_torch(x: Tensor<4>, scale: f64, mode: &InterpolateMode) -> Tensor<4> {
    let [_, _, height, width] = x.dims();
    let device = x.device();
    let rows = resample_matrix(height, scale, mode, &device); // [out_h, h]
    let cols = resample_matrix(width, scale, mode, &device); // [out_w, w]
    rows.unsqueeze::<4>().matmul(x).matmul(cols.transpose().unsqueeze::<4>())
}

/// `[floor(in_size·scale), in_size]`: row `o` holds the weights output pixel `o` gives each input.
fn resample_matrix(in_size: usize, scale: f64, mode: &InterpolateMode, device: &burn::tensor::Device) -> Tensor<2> {
    let out_size = (in_size as f64 * scale).floor() as usize;
    let step = 1.0 / scale; // PyTorch's step between output pixels, in input pixels
    let last = in_size as isize - 1;
    let mut weights = vec![0.0f32; out_size * in_size];
    for o in 0..out_size {
        let row = &mut weights[o * in_size..(o + 1) * in_size];
        let at = |index: isize| index.clamp(0, last) as usize; // PyTorch repeats the border pixel
        match mode {
            // PyTorch computes this index in f32: floor(o · (1/scale)).
            InterpolateMode::Nearest => row[at((o as f32 * step as f32).floor() as isize)] = 1.0,
            InterpolateMode::Linear => {
                let position = ((o as f64 + 0.5) * step - 0.5).max(0.0);
                let (left, t) = (position.floor(), position - position.floor());
                row[at(left as isize)] += (1.0 - t) as f32;
                row[at(left as isize + 1)] += t as f32;
            }
            InterpolateMode::Cubic => {
                let position = (o as f64 + 0.5) * step - 0.5; // not clamped, as in PyTorch
                let (left, t) = (position.floor(), position - position.floor());
                for offset in -1..=2isize {
                    row[at(left as isize + offset)] += cubic_weight(t - offset as f64) as f32;
                }
            }
            other => unimplemented!("{other:?}: PyTorch has no scale-factor form to reproduce here"),
        }
    }
    Tensor::from_data(TensorData::new(weights, [out_size, in_size]), device)
}

/// Keys' cubic convolution kernel with a = −0.75, PyTorch's (and burn's) choice.
fn cubic_weight(distance: f64) -> f64 {
    let (a, d) = (-0.75, distance.abs());
    if d < 1.0 {
        ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
    } else if d < 2.0 {
        ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a
    } else {
        0.0
    }
}
// book:end
