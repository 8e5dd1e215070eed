//! p10: burn's bilinear interpolation aligns corners by default (module config and functional
//! options); PyTorch's `F.interpolate` and `nn.Upsample` default to `align_corners=False`.
use burn::nn::interpolate::{Interpolate2dConfig, InterpolateMode};
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode as OpsMode, InterpolateOptions};
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, tensor, values};

// book:begin setup
const IMAGE: [f32; 4] = [0.0, 1.0, 2.0, 3.0]; // one channel, 2×2
const SIZE: [usize; 2] = [4, 4];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "fn-port", "fixed"]);
    let device = device();
    let input_sha256 = inputs_sha256(&[&IMAGE]);
    let x = tensor(&IMAGE, [1, 1, 2, 2], &device); // [N, C, H, W]
    let (out, align_corners) = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let upsample = Interpolate2dConfig::new()
                .with_output_size(Some(SIZE))
                .with_mode(InterpolateMode::Linear) // bilinear on 2-D
                .init();
            let out = upsample.forward(x);
            // book:end
            println!("Interpolate2d align_corners: {}", upsample.align_corners);
            (out, upsample.align_corners)
        }
        "fn-port" => {
            // book:begin fn_port
            let mut options = InterpolateOptions::new(OpsMode::Bilinear);
            options.output_size = Some(SIZE);
            // book:end
            let align_corners = pita_lab::compat::interpolate_align_corners(&options);
            println!("InterpolateOptions align_corners: {align_corners}");
            // book:begin fn_forward
            let out = interpolate(x, options);
            // book:end
            (out, align_corners)
        }
        "fixed" => {
            // book:begin fixed
            let upsample = Interpolate2dConfig::new()
                .with_output_size(Some(SIZE))
                .with_mode(InterpolateMode::Linear)
                .with_align_corners(false)
                .init();
            let out = upsample.forward(x);
            // book:end
            println!("Interpolate2d align_corners: {}", upsample.align_corners);
            (out, upsample.align_corners)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    for row in values(out.clone()).chunks(SIZE[1]) {
        println!("out row {row:?}");
    }
    // the setting the layer or the options held, for the defaults table
    let mut dump = dump_builder("p10", &args.variant, &input_sha256, &device)
        .metadata("align_corners", align_corners)
        .build()?;
    dump.tensor("out", out)?;
    dump.write(&args.out)?;
    Ok(())
}
