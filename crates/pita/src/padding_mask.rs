//! Guard for attention padding masks: a sequence whose keys are all padding has no defined
//! attention. PyTorch's `nn.MultiheadAttention` returns NaN for it (or zeros through SDPA);
//! burn's `MultiHeadAttention` masks with a finite `min_float` and averages every value.

use burn::tensor::{Bool, Tensor};

/// The words [`assert_no_empty_sequence`] panics with; the book quotes the message from a live run.
pub const EMPTY_SEQUENCE: &str = "every key is padding";

// book:begin assert_no_empty_sequence
/// Panics if a row of `mask_pad` (`[batch, seq]`, true = padding) is all true.
#[track_caller]
pub fn assert_no_empty_sequence(mask_pad: &Tensor<2, Bool>) {
    let [_, seq] = mask_pad.dims();
    let flags = mask_pad.to_data().convert::<bool>().try_to_vec::<bool>().expect("bool data");
    if let Some(row) = flags.chunks(seq).position(|keys| keys.iter().all(|&padded| padded)) {
        panic!("sequence {row} of the batch: {EMPTY_SEQUENCE}; its attention is undefined (NaN in PyTorch, a uniform average in burn)");
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    fn mask(rows: [[bool; 3]; 2]) -> Tensor<2, Bool> {
        Tensor::<2, Bool>::from_data(TensorData::from(rows), &Device::flex())
    }

    #[test]
    fn accepts_partly_padded_sequences() {
        assert_no_empty_sequence(&mask([[false, false, true], [false, true, true]]));
    }

    #[test]
    #[should_panic(expected = "sequence 1 of the batch: every key is padding")]
    fn rejects_a_fully_padded_sequence() {
        assert_no_empty_sequence(&mask([[false, false, true], [true, true, true]]));
    }
}
