//! p10d: a dilated Conv1d with `PaddingConfig1d::Same`. burn sizes `Same` from the kernel size and
//! stride only, so with dilation 2 the output is shorter than the input; PyTorch's keeps it.
use burn::module::Param;
use burn::nn::PaddingConfig1d;
use burn::nn::conv::Conv1dConfig;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita::same_padding::{check_same_padding, torch_same_1d};
use pita_lab::{device, tensor, values};

// book:begin setup
const LENGTH: usize = 10;
const KERNEL_SIZE: usize = 3;
const DILATION: usize = 2;
const WEIGHT: [f32; 3] = [0.5, -0.25, 0.75]; // [channels_out, channels_in, kernel], as in PyTorch
const BIAS: [f32; 1] = [0.125];
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["same", "explicit", "residual", "guard"]);
    let device = device();
    let inputs = ramp(LENGTH, 0);
    let input_sha256 = inputs_sha256(&[&inputs, &WEIGHT, &BIAS]);
    let x = tensor(&inputs, [1, 1, LENGTH], &device);

    let config = match args.variant.as_str() {
        // book:begin same
        "same" | "residual" | "guard" => Conv1dConfig::new(1, 1, KERNEL_SIZE)
            .with_dilation(DILATION)
            .with_padding(PaddingConfig1d::Same),
        // book:end
        // book:begin explicit
        "explicit" => Conv1dConfig::new(1, 1, KERNEL_SIZE)
            .with_dilation(DILATION)
            .with_padding(torch_same_1d(KERNEL_SIZE, DILATION)), // Explicit(2, 2)
        // book:end
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    if args.variant == "guard" {
        // book:begin guard
        check_same_padding(&config);
        // book:end
    }
    let mut conv = config.init(&device);
    conv.weight = Param::from_tensor(tensor(&WEIGHT, [1, 1, KERNEL_SIZE], &device));
    conv.bias = Some(Param::from_tensor(tensor(&BIAS, [1], &device)));

    let out = if args.variant == "residual" {
        // book:begin residual
        let out = x.clone() + conv.forward(x.clone());
        // book:end
        out
    } else {
        conv.forward(x.clone())
    };
    println!("x dims {:?} out dims {:?}", x.dims(), out.dims());
    println!("out {:?}", values(out.clone()));

    let mut dump = dump_builder("p10d", &args.variant, &input_sha256, &device)
        .metadata("kernel_size", KERNEL_SIZE)
        .metadata("dilation", DILATION).build()?;
    dump.tensor("out", out)?;
    dump.write(&args.out)?;
    Ok(())
}
