//! Guard for attention padding masks: a sequence whose keys are all padding has no defined
//! attention. PyTorch's `nn.MultiheadAttention` returns NaN for it (or zeros through SDPA);
//! burn's `MultiHeadAttention` masks with a finite `min_float` and averages every value.

use burn::tensor::{Bool, Tensor};

use crate::Error;

// book:begin assert_no_empty_sequence
/// Returns an error if a row of `mask_pad` (`[batch, seq]`, true = padding) is all true.
///
/// Cost: copies the mask to the host, a device sync and O(batch·seq).
pub fn check_no_empty_sequence(mask_pad: &Tensor<2, Bool>) -> Result<(), Error> {
    let [_, seq] = mask_pad.dims();
    let flags = mask_pad.to_data().convert::<bool>().try_to_vec::<bool>().expect("bool data");
    if let Some(row) = flags.chunks(seq.max(1)).position(|keys| keys.iter().all(|&padded| padded)) {
        let message = format!(
            "sequence {row} of the batch: every key is padding; its attention is undefined (NaN in PyTorch, a uniform average in burn)"
        );
        return Err(Error::check("padding_mask::check_no_empty_sequence", message));
    }
    Ok(())
}

/// Panics with [`check_no_empty_sequence`]'s message if a sequence is all padding. Same cost.
#[track_caller]
pub fn assert_no_empty_sequence(mask_pad: &Tensor<2, Bool>) {
    if let Err(error) = check_no_empty_sequence(mask_pad) {
        panic!("{error}");
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

    #[test]
    fn the_result_form_names_the_row() {
        let error = check_no_empty_sequence(&mask([[true, true, true], [false, false, false]])).unwrap_err();
        assert!(error.to_string().starts_with("sequence 0 of the batch: every key is padding"));
    }
}
