//! p06: `chunk(4, 0)` of 9 and of 5 elements. burn sizes the chunks `size / chunks + 1` and always
//! makes `chunks - 1` of them, so where PyTorch returns fewer chunks, burn asks `narrow` for an
//! empty or out-of-range slice and panics.
use burn::tensor::Tensor;
use pita_lab::dump_builder;
use pita_lab::inputs::{inputs_sha256, ramp};
use pita_lab::{device, tensor};

// book:begin setup
const CHUNKS: usize = 4;
// book:end

// book:begin torch_chunk
/// PyTorch's `chunk`: pieces of `ceil(size / chunks)`, the last one shorter, possibly fewer
/// than `chunks` pieces.
fn torch_chunk(tensor: Tensor<1>, chunks: usize, dim: usize) -> Vec<Tensor<1>> {
    let size = tensor.dims()[dim];
    tensor.split(size.div_ceil(chunks), dim)
}
// book:end

fn main() -> Result<(), pita::Error> {
    let args = pita_lab::args::Args::parse(&["port-9", "port-5", "fixed", "floor"]);
    let device = device();
    let (x_values, y_values) = (ramp(9, 0), ramp(5, 9));
    let input_sha256 = inputs_sha256(&[&x_values, &y_values]);
    // book:begin inputs
    let x = tensor(&x_values, [9], &device);
    let y = tensor(&y_values, [5], &device);
    // book:end

    let (x_chunks, y_chunks) = match args.variant.as_str() {
        "port-9" => {
            // book:begin port9
            let x_chunks = x.chunk(CHUNKS, 0); // torch: x.chunk(4)
            // book:end
            (x_chunks, y.chunk(CHUNKS, 0))
        }
        "port-5" => {
            // book:begin port5
            let y_chunks = y.chunk(CHUNKS, 0); // torch: y.chunk(4)
            // book:end
            (x.chunk(CHUNKS, 0), y_chunks)
        }
        "fixed" => {
            // book:begin fixed
            let x_chunks = torch_chunk(x, CHUNKS, 0);
            let y_chunks = torch_chunk(y, CHUNKS, 0);
            // book:end
            (x_chunks, y_chunks)
        }
        "floor" => {
            // A tempting wrong fix: pieces of size / chunks (rounded down) give too many chunks.
            // book:begin floor
            let x_chunks = x.clone().split(x.dims()[0] / CHUNKS, 0);
            let y_chunks = y.clone().split(y.dims()[0] / CHUNKS, 0);
            // book:end
            (x_chunks, y_chunks)
        }
        _ => unreachable!("Args::parse accepts only the listed variants"),
    };
    let mut dump = dump_builder("p06", &args.variant, &input_sha256, &device).metadata("chunks", CHUNKS).build()?;
    for (name, chunks) in [("x", x_chunks), ("y", y_chunks)] {
        let sizes: Vec<usize> = chunks.iter().map(|c| c.dims()[0]).collect();
        println!("{name}: {} chunks of sizes {sizes:?}", chunks.len());
        for (i, chunk) in chunks.into_iter().enumerate() {
            dump.tensor(&format!("{name}.{i}"), chunk)?;
        }
    }
    dump.write(&args.out)?;
    Ok(())
}
