//! p02: the mean of an Int tensor is an Int (the quotient truncated), and burn-flex's default Int
//! dtype is I32, whose products wrap around silently. PyTorch refuses an integer mean and computes
//! integers in int64.
use burn::tensor::{Device, Int, IntDType, Tensor, TensorData};
use pita_lab::dump_builder;
use pita_lab::inputs::inputs_sha256;
use pita_lab::{device, values};

// book:begin setup
const PRED: [i64; 5] = [1, 0, 2, 1, 1]; // predicted classes
const LABELS: [i64; 5] = [1, 1, 2, 0, 1]; // true classes
const X: [i64; 2] = [3, 50000];
const Y: [i64; 2] = [7, 50000];
// book:end

fn ints(values: &[i64], device: &Device) -> Tensor<1, Int> {
    Tensor::from_data(TensorData::new(values.to_vec(), [values.len()]), device)
}

fn int_values(tensor: Tensor<1, Int>) -> Vec<i64> {
    tensor.into_data().convert::<i64>().try_to_vec::<i64>().expect("i64 data")
}

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "port-ndarray", "fixed"]);
    let as_f32 = |v: &[i64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let input_sha256 = inputs_sha256(&[&as_f32(&PRED), &as_f32(&LABELS), &as_f32(&X), &as_f32(&Y)]);
    let device = match args.variant.as_str() {
        "port-ndarray" => pita_lab::compat::ndarray_device(),
        "fixed" => {
            // book:begin configure
            let mut device = device();
            // Before the first tensor: afterwards the defaults are locked.
            device.configure(IntDType::I64).expect("configure I64 before any tensor");
            // book:end
            device
        }
        _ => device(),
    };
    println!("{} int dtype {:?}", args.variant, device.settings().int_dtype);
    let (pred, labels) = (ints(&PRED, &device), ints(&LABELS, &device));
    let (x, y) = (ints(&X, &device), ints(&Y, &device));

    let (accuracy, product) = if args.variant == "fixed" {
        // book:begin fixed
        let accuracy = pred.equal(labels).float().mean();
        let product = x * y; // Int is I64 on this device now
        // book:end
        (accuracy, product)
    } else {
        // book:begin port
        let accuracy = pred.equal(labels).int().mean(); // torch: (pred == labels).int().mean()
        let product = x * y;
        // book:end
        println!("{} accuracy dtype {:?}", args.variant, accuracy.dtype());
        (accuracy.float(), product)
    };
    println!("{} accuracy {:?}", args.variant, values(accuracy.clone()));
    println!("{} product {:?} ({:?})", args.variant, int_values(product.clone()), product.dtype());

    let mut dump = dump_builder("p02", &args.variant, &input_sha256, &device).build()?;
    dump.tensor("accuracy", accuracy)?.tensor("product", product.float())?;
    dump.write(&args.out)?;
    Ok(())
}
