//! p26: two evaluation batches through a fresh BatchNorm on the training (autodiff) device.
//! Without `valid()` burn takes the training path: batch statistics, and every call updates the
//! running statistics.
use burn::module::Module;
use burn::nn::{BatchNorm, BatchNormConfig};
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita::inference::assert_inference;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor, values};

// book:begin setup
const BATCH: usize = 4;
const FEATURES: usize = 2;
const CALLS: usize = 2; // two validation batches
// book:end

// book:begin model
#[derive(Module, Debug)]
struct Net {
    norm: BatchNorm, // BatchNormConfig::new(2): running_mean 0, running_var 1, momentum 0.1
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "valid", "guard"]);
    let device = device(); // Flex wrapped in Autodiff: the training device
    let inputs = ramp(8, 0);
    let input_sha256 = inputs_sha256(&[&inputs]);
    let model = Net { norm: BatchNormConfig::new(FEATURES).init(&device) };

    let (model, x_device) = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let (model, x_device) = (model, device.clone()); // the training model and device
            // book:end
            (model, x_device)
        }
        "valid" => {
            // book:begin valid
            let (model, x_device) = (model.valid(), device.clone().inner());
            // book:end
            (model, x_device)
        }
        "guard" => {
            // book:begin guard
            let x = tensor(&inputs, [BATCH, FEATURES], &device);
            assert_inference(&model, &x); // panics: the model is still in training mode
            // book:end
            (model, device.clone())
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let mut out: Option<Tensor<2>> = None;
    for call in 1..=CALLS {
        // book:begin forward
        let x = tensor(&inputs, [BATCH, FEATURES], &x_device);
        let y = model.norm.forward(x);
        // book:end
        out = Some(y);
        println!(
            "call {call}: running_mean {:?} running_var {:?}",
            values(model.norm.running_mean.value_sync()),
            values(model.norm.running_var.value_sync())
        );
    }
    let out = out.expect("CALLS > 0");
    println!("out {:?}", values(out.clone()));

    let mut dump = dump_builder("p26", &args.variant, &input_sha256, &out.device())
        .metadata("batch_size", BATCH)
        .metadata("calls", CALLS).build()?;
    dump.tensor("out", out)?
        .tensor("running_mean", model.norm.running_mean.value_sync())?
        .tensor("running_var", model.norm.running_var.value_sync())?;
    dump.write(&args.out)?;
    Ok(())
}
