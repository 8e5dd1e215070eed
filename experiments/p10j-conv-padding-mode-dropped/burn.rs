//! p10j: a Conv2d ported from PyTorch's `padding=1, padding_mode='reflect'`. burn's convolutions
//! pad with zeros only; the port without `padding_mode` differs at the border. Padding the input
//! with `Tensor::pad` (or `pita::pad_mode` for 'circular') and convolving with `Valid` matches.
use burn::module::Param;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::PaddingConfig2d;
use burn::tensor::ops::PadMode;
use burn::tensor::Device;
use pita::pad_mode::{pad_like_torch, TorchPaddingMode};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const C_IN: usize = 2;
const C_OUT: usize = 2;
const HEIGHT: usize = 5;
const WIDTH: usize = 6;
const KERNEL: usize = 3;
const PADDING: usize = 1;
// book:end
const BIAS: [f32; C_OUT] = [0.125, -0.25];

fn with_weights(mut conv: Conv2d, weight: &[f32], device: &Device) -> Conv2d {
    conv.weight = Param::from_tensor(tensor(weight, [C_OUT, C_IN, KERNEL, KERNEL], device)); // PyTorch's layout
    conv.bias = Some(Param::from_tensor(tensor(&BIAS, [C_OUT], device)));
    conv
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "reflect", "edge", "circular"]);
    let device = device();
    let x_in: Vec<f32> = ramp(C_IN * HEIGHT * WIDTH, 0).iter().map(|v| v / 8.0).collect();
    let weight: Vec<f32> = ramp(C_OUT * C_IN * KERNEL * KERNEL, 3).iter().map(|v| v / 8.0).collect();
    let input_sha256 = inputs_sha256(&[&x_in, &weight, &BIAS]);
    let x = tensor(&x_in, [1, C_IN, HEIGHT, WIDTH], &device);

    let (config, out) = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let config = Conv2dConfig::new([C_IN, C_OUT], [KERNEL, KERNEL])
                .with_padding(PaddingConfig2d::Explicit(PADDING, PADDING, PADDING, PADDING)); // padding_mode: nowhere to put it
            let conv = with_weights(config.init(&device), &weight, &device);
            let out = conv.forward(x);
            // book:end
            (config, out)
        }
        "reflect" | "edge" => {
            let mode = if args.variant == "reflect" { PadMode::Reflect } else { PadMode::Edge };
            // book:begin reflect
            let config = Conv2dConfig::new([C_IN, C_OUT], [KERNEL, KERNEL]); // padding: Valid (the default)
            let conv = with_weights(config.init(&device), &weight, &device);
            let padded = x.pad([(PADDING, PADDING), (PADDING, PADDING)], mode); // PadMode::Reflect / PadMode::Edge
            let out = conv.forward(padded);
            // book:end
            (config, out)
        }
        "circular" => {
            // book:begin circular
            let config = Conv2dConfig::new([C_IN, C_OUT], [KERNEL, KERNEL]);
            let conv = with_weights(config.init(&device), &weight, &device);
            let out = conv.forward(pad_like_torch(x, &[PADDING, PADDING], TorchPaddingMode::Circular));
            // book:end
            (config, out)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    println!("padding {:?} out {:?}, channel 0:", config.padding, out.dims());
    for row in values(out.clone().slice([0..1, 0..1])).chunks(WIDTH) {
        println!("  {}", row.iter().map(|v| format!("{v:8.4}")).collect::<Vec<_>>().join(" "));
    }
    let mut dump = dump_builder("p10j", &args.variant, &input_sha256, &device)
        .metadata("padding", PADDING)
        .metadata("conv_padding", format!("{:?}", config.padding))
        .build()?;
    dump.tensor("out", out)?;
    dump.write(&args.out)?;
    Ok(())
}
