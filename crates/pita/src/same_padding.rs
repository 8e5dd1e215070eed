//! PyTorch's `padding="same"` for dilated 1-D convolutions ([`torch_same_1d`], a fix), and a
//! guard against burn's `Same`, which sizes the padding from the kernel size alone.
//!
//! The guard's panicking form keeps the name the handbook gives it, [`check_same_padding`];
//! its `Result` form is [`validate_same_padding`].

use burn::nn::conv::Conv1dConfig;
use burn::nn::PaddingConfig1d;

use crate::Error;

// book:begin torch_same_1d
/// PyTorch's `padding="same"` (stride 1): `dilation·(kernel_size − 1)` in total, split evenly,
/// the odd element at the end.
pub fn torch_same_1d(kernel_size: usize, dilation: usize) -> PaddingConfig1d {
    let total = dilation * (kernel_size - 1);
    PaddingConfig1d::Explicit(total / 2, total - total / 2)
}
// book:end

// book:begin check_same_padding
/// Returns an error for a config whose `Same` padding would not keep the length (dilation
/// above 1), naming the padding PyTorch's `padding="same"` uses.
///
/// Cost: reads the config only (free); run it where the layer is configured.
pub fn validate_same_padding(config: &Conv1dConfig) -> Result<(), Error> {
    if config.padding == PaddingConfig1d::Same && config.dilation > 1 {
        let want = torch_same_1d(config.kernel_size, config.dilation);
        let message = format!("PaddingConfig1d::Same ignores dilation (dilation {}); use {want:?}", config.dilation);
        return Err(Error::check("same_padding::validate_same_padding", message));
    }
    Ok(())
}

/// Panics with [`validate_same_padding`]'s message for `Same` padding with dilation. Same cost.
#[track_caller]
pub fn check_same_padding(config: &Conv1dConfig) {
    if let Err(error) = validate_same_padding(config) {
        panic!("{error}");
    }
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_dilation_times_kernel_minus_one() {
        assert_eq!(torch_same_1d(3, 1), PaddingConfig1d::Explicit(1, 1));
        assert_eq!(torch_same_1d(3, 2), PaddingConfig1d::Explicit(2, 2));
        assert_eq!(torch_same_1d(4, 1), PaddingConfig1d::Explicit(1, 2));
    }

    #[test]
    fn accepts_same_without_dilation_and_explicit_with_it() {
        check_same_padding(&Conv1dConfig::new(1, 1, 3).with_padding(PaddingConfig1d::Same));
        check_same_padding(&Conv1dConfig::new(1, 1, 3).with_dilation(2).with_padding(torch_same_1d(3, 2)));
    }

    #[test]
    #[should_panic(expected = "PaddingConfig1d::Same ignores dilation (dilation 2); use Explicit(2, 2)")]
    fn rejects_same_with_dilation() {
        check_same_padding(&Conv1dConfig::new(1, 1, 3).with_dilation(2).with_padding(PaddingConfig1d::Same));
    }

    #[test]
    fn the_result_form_names_the_fix() {
        let config = Conv1dConfig::new(1, 1, 3).with_dilation(2).with_padding(PaddingConfig1d::Same);
        let error = validate_same_padding(&config).unwrap_err();
        assert_eq!(error.to_string(), "PaddingConfig1d::Same ignores dilation (dilation 2); use Explicit(2, 2)");
    }
}
