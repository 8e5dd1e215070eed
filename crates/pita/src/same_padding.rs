//! PyTorch's `padding="same"` for dilated 1-D convolutions, and a guard against burn's `Same`,
//! which sizes the padding from the kernel size alone.

use burn::nn::PaddingConfig1d;
use burn::nn::conv::Conv1dConfig;

/// The words [`check_same_padding`] panics with; the book quotes the message from a live run.
pub const SAME_IGNORES_DILATION: &str = "PaddingConfig1d::Same ignores dilation";

// book:begin torch_same_1d
/// PyTorch's `padding="same"` (stride 1): `dilation·(kernel_size − 1)` in total, split evenly,
/// the odd element at the end.
pub fn torch_same_1d(kernel_size: usize, dilation: usize) -> PaddingConfig1d {
    let total = dilation * (kernel_size - 1);
    PaddingConfig1d::Explicit(total / 2, total - total / 2)
}
// book:end

// book:begin check_same_padding
/// Rejects a config whose `Same` padding would not keep the length (dilation above 1).
#[track_caller]
pub fn check_same_padding(config: &Conv1dConfig) {
    if config.padding == PaddingConfig1d::Same && config.dilation > 1 {
        let want = torch_same_1d(config.kernel_size, config.dilation);
        panic!("{SAME_IGNORES_DILATION} (dilation {}); use {want:?}", config.dilation);
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
}
