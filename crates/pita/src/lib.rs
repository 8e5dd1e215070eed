#![doc = include_str!("../README.md")]
//!
//! # Modules
//!
//! Dumps, recordings, and the error type:
//!
//! - [`dump`] — [`Dump`](dump::Dump), its builder and [`backend_name`](dump::backend_name):
//!   named tensors in their own dtypes plus provenance, as safetensors and readable JSON.
//! - [`error`] — [`Error`], what every fallible function returns.
//! - [`record`] — [`Recorder`](record::Recorder), [`tap`](record::tap) and [`tap!`]: one
//!   training run (parameters, the first forward's activations in execution order, loss,
//!   gradients, the parameters and buffers after each step, the optimizer's settings) recorded
//!   into a dump under PyTorch's names and layouts (packed GRU/LSTM/attention tensors included,
//!   and the names the weights were loaded from), for `pita trace` to find the first divergence
//!   (docs/recording.md). `Recorder::grads` needs the feature `autodiff`.
//! - [`replay`] — [`Replay`](replay::Replay) and [`dropout`](replay::dropout): a reference
//!   recording's dropout masks (`mask<k>/…`) applied in the burn run, as PyTorch applies them.
//! - [`tapped`] — tapped forwards of burn's `MultiHeadAttention`, `TransformerEncoderLayer` and
//!   `TransformerEncoder`: burn's arithmetic, tapped under PyTorch's module names.
//!
//! Guards, one module each, every one with a panicking form (`#[track_caller]`, for tests and
//! debug runs) and a form returning `Result<_, Error>` (`check_*`, or `try_*` where the guard
//! computes something: `try_backward_scalar`, `try_mse_loss`, …); each function's docs state its
//! cost. `same_padding::check_same_padding` keeps the name the handbook gives it and panics; its
//! `Result` form is `validate_same_padding`.
//! Modules behind a crate feature are named without a link; build the docs with
//! `--all-features` to see them.
//!
//! - [`bce_targets`] — [`hard_targets`](bce_targets::hard_targets), BCE targets cast to `Int`
//!   that `.int()` would truncate (soft labels: 0.9 becomes 0). Also the fix,
//!   [`binary_cross_entropy_with_logits`](bce_targets::binary_cross_entropy_with_logits), with
//!   float targets.
//! - `clip_norm` (feature `optim`) — `assert_no_per_tensor_norm_clipping`, burn's
//!   `GradientClipping::Norm` is not `clip_grad_norm_`. Also the fix, `clip_grad_norm`,
//!   PyTorch's global-norm clipping.
//! - [`finite`] — [`assert_finite`](finite::assert_finite), a tensor holding inf or NaN.
//! - `gelu_grad` (feature `autodiff`) — `assert_exact_gelu_backward`, a backend whose GELU
//!   gradient is the tanh approximation's. Also the fix, `gelu_erf`.
//! - `guard` (feature `autodiff`) — `backward_scalar`, a loss not reduced before backward.
//! - [`hparams`] — [`assert_torch_hparams`](hparams::assert_torch_hparams), optimizer defaults that
//!   differ from PyTorch's; helpers [`hparam`](hparams::hparam), [`config_line`](hparams::config_line).
//! - [`inference`] — [`assert_inference`](inference::assert_inference), an evaluation pass in
//!   training mode; the type [`Inference`](inference::Inference) makes it a compile error.
//! - [`kink`] — [`assert_off_kinks`](kink::assert_off_kinks), [`assert_unique_max`](kink::assert_unique_max),
//!   [`assert_no_ties`](kink::assert_no_ties), inputs where the two frameworks pick different
//!   one-sided gradients.
//! - `load_check` (feature `store`) — `assert_fully_loaded`, parameters a partial load left at
//!   their initial values.
//! - [`loss_guard`] — [`binary_cross_entropy`](loss_guard::binary_cross_entropy) and
//!   [`cross_entropy_with_logits`](loss_guard::cross_entropy_with_logits), burn's losses refusing
//!   inputs in PyTorch's convention.
//! - [`padding_mask`] — [`assert_no_empty_sequence`](padding_mask::assert_no_empty_sequence), an
//!   attention row whose keys are all padding.
//! - [`same_padding`] — [`check_same_padding`](same_padding::check_same_padding), burn's `Same`
//!   padding with dilation. Also the fix, [`torch_same_1d`](same_padding::torch_same_1d).
//! - [`same_shape`] — [`mse_loss`](same_shape::mse_loss), a prediction and target that broadcast.
//! - [`store_origin`] — [`assert_written_by_burn`](store_origin::assert_written_by_burn), a
//!   PyTorch safetensors file loaded without the layout adapter.
//! - [`torch_layout`] — [`TorchLinearWeight`](torch_layout::TorchLinearWeight), a PyTorch Linear
//!   weight kept in its `[out, in]` layout by its type, so storing it in a burn `Linear` as it is
//!   does not compile; [`linear_from_torch`](torch_layout::linear_from_torch), the fix that
//!   transposes it, panics when the bias does not fit.
//!
//! Fixes, not guards: they compute what the PyTorch code computes.
//!
//! - [`attend_mask`] — [`sdpa`](attend_mask::sdpa) with PyTorch's boolean-mask meaning, the mask
//!   typed as [`AttendMask`](attend_mask::AttendMask).
//! - [`pad_mode`] — [`pad_like_torch`](pad_mode::pad_like_torch), a conv input padded as
//!   PyTorch's `padding_mode` (`'reflect'`, `'replicate'`, `'circular'`) pads it; burn's
//!   convolutions pad with zeros only. Panics on padding PyTorch refuses; `try_pad_like_torch`
//!   returns the error.
//! - [`padding_idx`] — [`embedding_with_padding_idx`](padding_idx::embedding_with_padding_idx),
//!   `nn.Embedding(padding_idx=…)`.
//! - [`rope_pairs`] — [`reorder_for_rotary`](rope_pairs::reorder_for_rotary), a q/k projection
//!   from HF transformers (`rotate_half`, pairs `(i, i + d/2)`) reordered for burn's
//!   `RotaryEncoding` (pairs `(2i, 2i + 1)`); the order itself,
//!   [`rotate_half_order`](rope_pairs::rotate_half_order). Both panic on sizes that do not fit;
//!   `try_*` forms return the error.
//!
//! # Costs
//!
//! A guard that reads only shapes, configs or module flags is free. One that reads tensor values
//! copies them to the host: a device sync and O(n) work, fine in tests and debug runs, worth
//! keeping out of a hot training loop on a GPU. The docs of each say which it is.

#![warn(missing_docs)]

pub mod attend_mask;
pub mod bce_targets;
#[cfg(feature = "optim")]
pub mod clip_norm;
pub mod dump;
pub mod error;
pub mod finite;
#[cfg(feature = "autodiff")]
pub mod gelu_grad;
#[cfg(feature = "autodiff")]
pub mod guard;
pub mod hparams;
pub mod inference;
pub mod kink;
#[cfg(feature = "store")]
pub mod load_check;
pub mod loss_guard;
pub mod pad_mode;
pub mod padding_idx;
pub mod padding_mask;
pub mod record;
pub mod replay;
pub mod rope_pairs;
pub mod same_padding;
pub mod same_shape;
pub mod store_origin;
pub mod tapped;
pub mod torch_layout;

pub use error::Error;

/// The build script's search for burn's version, tested with the crate.
#[cfg(test)]
#[allow(dead_code)] // its `main` is the build script's
#[path = "../build.rs"]
mod build_script;

/// The burn this crate was built with, so a port can name the same one (`pita::burn::…`).
pub use burn;

#[cfg(test)]
mod tests {
    //! Every panicking guard panics at its caller, the line a user fixes (`#[track_caller]` on
    //! the guard, and no closure between it and the `panic!`).
    use std::cell::RefCell;
    use std::panic::{self, AssertUnwindSafe};

    use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

    thread_local! {
        static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    fn panic_file(guard: impl FnOnce()) -> String {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            let default = panic::take_hook();
            panic::set_hook(Box::new(move |info| {
                LOCATION.with(|at| *at.borrow_mut() = info.location().map(|l| l.file().to_string()));
                default(info);
            }));
        });
        assert!(panic::catch_unwind(AssertUnwindSafe(guard)).is_err(), "the guard did not panic");
        LOCATION.with(|at| at.borrow_mut().take()).unwrap_or_default()
    }

    type Case = (&'static str, Box<dyn FnOnce()>);

    fn floats(values: &[f32]) -> Tensor<1> {
        Tensor::<1>::from_floats(values, &Device::flex())
    }

    #[test]
    #[allow(deprecated)]
    fn guards_panic_at_their_caller() {
        use crate::*;
        let device = Device::flex();
        let here = file!();
        let bce = burn::nn::loss::BinaryCrossEntropyLossConfig::new().init(&device);
        let targets = Tensor::<1, Int>::from_ints([0, 1], &device);
        let conv = burn::nn::conv::Conv1dConfig::new(1, 1, 3).with_dilation(2).with_padding(burn::nn::PaddingConfig1d::Same);
        let mask = Tensor::<2, Bool>::from_data(TensorData::from([[true, true]]), &device);
        let dropout: burn::nn::Dropout = burn::nn::DropoutConfig::new(0.5).init();
        let batch_norm: burn::nn::BatchNorm = burn::nn::BatchNormConfig::new(2).init(&device);
        let autodiff_input = Tensor::<2>::ones([2, 2], &device.clone().autodiff());
        let cases: Vec<Case> = vec![
            ("finite", Box::new(|| finite::assert_finite(&floats(&[f32::NAN]), "x"))),
            ("mse_loss", Box::new(|| drop(same_shape::mse_loss(floats(&[1.0, 2.0]).reshape([2, 1]), floats(&[1.0, 2.0]).reshape([1, 2]))))),
            ("linear_from_torch", Box::new(|| drop(torch_layout::linear_from_torch(torch_layout::TorchLinearWeight::new(Tensor::zeros([2, 3], &Device::flex())), floats(&[0.0; 3]))))),
            ("binary_cross_entropy", Box::new(move || drop(loss_guard::binary_cross_entropy(&bce, floats(&[-1.0, 0.5]), targets)))),
            ("cross_entropy_with_logits", Box::new(|| drop(loss_guard::cross_entropy_with_logits(floats(&[0.1, 0.2]), floats(&[0.5, 0.7]))))),
            ("hard_targets", Box::new(|| drop(bce_targets::hard_targets(floats(&[0.9]))))),
            ("binary_cross_entropy_with_logits", Box::new(|| drop(bce_targets::binary_cross_entropy_with_logits(floats(&[0.0, 1.0]), floats(&[1.0]))))),
            ("off_kinks", Box::new(|| kink::assert_off_kinks(&floats(&[0.0]), &[0.0]))),
            ("unique_max", Box::new(|| kink::assert_unique_max(&floats(&[1.0, 1.0])))),
            ("no_ties", Box::new(|| kink::assert_no_ties(&floats(&[1.0]), &floats(&[1.0])))),
            ("no_empty_sequence", Box::new(move || padding_mask::assert_no_empty_sequence(&mask))),
            ("same_padding", Box::new(move || same_padding::check_same_padding(&conv))),
            ("inference", Box::new(move || inference::assert_inference(&batch_norm, &autodiff_input))),
            ("hparams", Box::new(|| hparams::assert_torch_hparams(&burn::optim::AdamConfig::new(), &[("epsilon", 1e-8)]))),
            ("written_by_burn", Box::new(|| store_origin::assert_written_by_burn(std::path::Path::new("/nonexistent.safetensors")))),
            ("dropout", Box::new(move || inference::assert_inference(&dropout, &Tensor::<1>::ones([2], &Device::flex().autodiff())))),
            ("rotate_half_order", Box::new(|| drop(rope_pairs::rotate_half_order(1, 5)))),
            ("pad_like_torch", Box::new(|| drop(pad_mode::pad_like_torch(floats(&[1.0, 2.0]), &[2], pad_mode::TorchPaddingMode::Reflect)))),
        ];
        for (name, guard) in cases {
            assert_eq!(panic_file(guard), here, "{name} panics elsewhere than at its caller");
        }
        #[cfg(feature = "autodiff")]
        {
            let loss = Tensor::<1>::from_floats([1.0, 2.0], &Device::flex().autodiff()).require_grad();
            assert_eq!(panic_file(move || drop(guard::backward_scalar(loss))), here, "backward_scalar");
            assert_eq!(panic_file(|| gelu_grad::assert_exact_gelu_backward(&Device::ndarray().autodiff())), here, "gelu");
        }
        #[cfg(feature = "optim")]
        {
            let clipping = Some(burn::grad_clipping::GradientClippingConfig::Norm(1.0));
            let optim = burn::optim::SgdConfig::new().with_gradient_clipping(clipping).init();
            assert_eq!(panic_file(move || clip_norm::assert_no_per_tensor_norm_clipping(&optim)), here, "clip_norm");
        }
        #[cfg(feature = "store")]
        {
            let result = burn::store::ApplyResult {
                applied: vec![],
                skipped: vec![],
                missing: vec![("bias".to_string(), "Linear".to_string())],
                unused: vec![],
                errors: vec![],
            };
            assert_eq!(panic_file(move || load_check::assert_fully_loaded(&result)), here, "load_check");
        }
    }
}
