//! p04a: a `0` in `reshape`'s shape. In burn 0.22.1 it copies the input's size at that position
//! (ONNX's `allowzero=0`); in PyTorch it is a literal zero-size axis. Reshaping an empty selection
//! `[batch * kept, dim]` to `[batch, kept, dim]` with `kept = 0` then panics, or, when the input's
//! copied size makes the count come out zero anyway, gives another shape without a word.
use burn::tensor::Tensor;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, dump_builder, tensor};

// book:begin setup
const DIM: usize = 4;
const KEPT_NONE: (usize, usize) = (2, 0); // (batch, kept per sample)
const EMPTY_BATCH: (usize, usize) = (0, 0);
// book:end

// book:begin fixed
/// `reshape` with PyTorch's meaning of `0`, a zero-size axis, on every burn version: a shape with
/// a zero is created empty, never reshaped (burn 0.22.1 would read the zero as "keep this axis").
fn reshape_literal<const D: usize, const D2: usize>(tensor: Tensor<D>, dims: [usize; D2]) -> Tensor<D2> {
    if dims.contains(&0) {
        assert_eq!(tensor.shape().num_elements(), 0, "reshape of {:?} to {dims:?}", tensor.dims());
        return Tensor::empty(dims, &tensor.device());
    }
    tensor.reshape(dims)
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port", "port-empty-batch", "fixed", "fixed-empty-batch", "keep-axis", "keep-axis-explicit"]);
    let device = device();
    if args.variant.starts_with("keep-axis") {
        let values = ramp(24, 0);
        let x: Tensor<3> = tensor(&values, [2, 3, DIM], &device);
        let input_shape = x.dims().map(|size| size as f32);
        let flat: Tensor<2> = if args.variant == "keep-axis" {
            // book:begin keep-axis
            x.reshape([0, -1]) // torch: x.reshape(x.shape[0], -1)
            // book:end
        } else {
            // book:begin keep-axis-explicit
            let batch = x.dims()[0] as i32;
            x.reshape([batch, -1])
            // book:end
        };
        println!("flat shape {:?}", flat.dims());
        let shape = flat.dims().map(|size| size as f32);
        let mut dump = dump_builder("p04a", &args.variant, &inputs_sha256(&[&values]), &device).build()?;
        dump.tensor("input_shape", tensor(&input_shape, [3], &device))?;
        dump.tensor("shape", tensor(&shape, [2], &device))?.tensor("flat", flat)?;
        dump.write(&args.out)?;
    } else {
        let (batch, kept) = if args.variant.ends_with("empty-batch") { EMPTY_BATCH } else { KEPT_NONE };
        let input_sha256 = inputs_sha256(&[&[batch as f32, kept as f32, DIM as f32]]);
        let selected: Tensor<2> = Tensor::zeros([batch * kept, DIM], &device); // the rows some selection kept: none
        let input_shape = selected.dims().map(|size| size as f32);
        let tokens: Tensor<3> = if args.variant.starts_with("port") {
            // book:begin port
            selected.reshape([batch, kept, DIM])
            // book:end
        } else {
            // book:begin fixed-call
            reshape_literal(selected, [batch, kept, DIM])
            // book:end
        };
        println!("tokens shape {:?}", tokens.dims());
        let shape = tokens.dims().map(|size| size as f32);
        let mut dump = dump_builder("p04a", &args.variant, &input_sha256, &device).build()?;
        dump.tensor("input_shape", tensor(&input_shape, [2], &device))?.tensor("shape", tensor(&shape, [3], &device))?;
        dump.write(&args.out)?;
    }
    Ok(())
}
