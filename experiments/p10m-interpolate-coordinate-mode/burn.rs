//! p10m: the coordinate mapping of `InterpolateOptions` (burn 0.23's `CoordinateTransformMode`)
//! against PyTorch's default `align_corners=False`: the default one, `HalfPixel` and
//! `PytorchHalfPixel`, on bilinear and bicubic resizing, one output axis being one pixel.
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};
use pita_lab::compat::{interpolate_coordinate_mode_name, interpolate_with_coordinate_mode, CoordinateMode};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const CASES: [(&str, InterpolateMode, [usize; 2]); 3] = [
    ("bilinear", InterpolateMode::Bilinear, [6, 6]),
    ("bicubic", InterpolateMode::Bicubic, [6, 6]),
    ("bilinear.1x1", InterpolateMode::Bilinear, [1, 1]), // an output axis of one pixel
];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "half-pixel", "pytorch-half-pixel"]);
    let device = device();
    let image = ramp(16, 0); // one channel, 4×4
    let input_sha256 = inputs_sha256(&[&image]);
    let x = tensor(&image, [1, 1, 4, 4], &device); // [N, C, H, W]
    let mut dump = dump_builder("p10m", &args.variant, &input_sha256, &device).build()?;
    for (name, mode, size) in CASES {
        let options = match args.variant.as_str() {
            // book:begin port
            "port" => InterpolateOptions::new(mode), // pita: allow(p10-options): the mode's default mapping, on purpose
            // book:end
            // book:begin half_pixel
            "half-pixel" => interpolate_with_coordinate_mode(InterpolateOptions::new(mode), CoordinateMode::HalfPixel), // pita: allow(p10-options)
            // book:end
            // book:begin pytorch_half_pixel
            "pytorch-half-pixel" => interpolate_with_coordinate_mode(InterpolateOptions::new(mode), CoordinateMode::PytorchHalfPixel), // pita: allow(p10-options)
            // book:end
            _ => unreachable!("Args::parse accepts only the listed variants"),
        };
        let mapping = interpolate_coordinate_mode_name(&options);
        let mut options = options;
        options.output_size = Some(size);
        let out = interpolate(x.clone(), options);
        let row: Vec<f32> = values(out.clone()).into_iter().take(size[1]).collect();
        println!("{name} {size:?} {mapping} row 0 {row:?}");
        dump.tensor(name, out)?;
    }
    dump.write(&args.out)?;
    Ok(())
}
