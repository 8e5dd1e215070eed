//! p30: a PyTorch Linear state_dict saved with safetensors, loaded with burn's SafetensorsStore.
//! Without PyTorchToBurnAdapter the `[out, in]` weight lands untransposed in burn's `[in, out]`
//! parameter: a square layer loads without an error and computes `x W + b` instead of `x Wᵀ + b`.
use burn::nn::{Linear, LinearConfig};
use burn::store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita::store_origin::assert_written_by_burn;
use pita_lab::{device, tensor, values};

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "nonsquare", "fixed", "guard"]);
    let device = device();
    // The same ramps the PyTorch side used; the weights themselves come from its file.
    let (weight, bias, x) = (ramp(9, 0), ramp(3, 9), ramp(6, 12));
    let (weight_3x2, bias_3x2) = (ramp(6, 18), ramp(2, 24));
    let input_sha256 = inputs_sha256(&[&weight, &bias, &x, &weight_3x2, &bias_3x2]);
    let path = args.out.join("linear3x3.safetensors");

    let fc: Linear = match args.variant.as_str() {
        "port" => {
            // book:begin port
            let mut fc: Linear = LinearConfig::new(3, 3).init(&device);
            let mut store = SafetensorsStore::from_file(&path);
            let result = fc.load_from(&mut store).expect("load linear3x3.safetensors");
            // book:end
            println!("applied {:?}, missing {:?}, errors {:?}", result.applied, result.missing, result.errors);
            fc
        }
        "nonsquare" => {
            // book:begin nonsquare
            let mut fc: Linear = LinearConfig::new(3, 2).init(&device);
            let mut store = SafetensorsStore::from_file(args.out.join("linear3x2.safetensors"));
            fc.load_from(&mut store).expect("load linear3x2.safetensors");
            // book:end
            fc
        }
        "fixed" => {
            // book:begin fixed
            let mut fc: Linear = LinearConfig::new(3, 3).init(&device);
            let mut store = SafetensorsStore::from_file(&path).with_from_adapter(PyTorchToBurnAdapter);
            let result = fc.load_from(&mut store).expect("load linear3x3.safetensors");
            // book:end
            println!("applied {:?}, missing {:?}, errors {:?}", result.applied, result.missing, result.errors);
            fc
        }
        "guard" => {
            // book:begin guard
            assert_written_by_burn(&path);
            // book:end
            unreachable!("the file was written by PyTorch")
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let x = tensor(&x, [2, 3], &device);
    // book:begin forward
    let y = fc.forward(x.clone());
    // Dumped in PyTorch's [out, in] layout, so the two dumps line up.
    let weight_out_in = fc.weight.val().transpose();
    // book:end
    println!("fc.weight [in, out] {:?}", values(fc.weight.val()));
    println!("y {:?}", values(y.clone()));

    let mut dump = dump_builder("p30", &args.variant, &input_sha256, &device).build()?;
    let bias = fc.bias.as_ref().expect("bias").val();
    dump.tensor("x", x)?.tensor("fc.weight", weight_out_in)?.tensor("fc.bias", bias)?.tensor("y", y)?;
    dump.write(&args.out)?;
    Ok(())
}
