//! Helpers shared by pita's burn experiments (`pita-t`) and by users checking their own ports.
//!
//! - [`dump`]: writes tensors as safetensors plus the readable JSON form (docs/dump-format.md).
//! - [`guard`]: runtime guards such as [`guard::backward_scalar`].

pub mod dump;
pub mod guard;

pub use burn;

/// The burn version Cargo.lock resolved when this crate was built.
pub const BURN_VERSION: &str = env!("PITA_BURN_VERSION");
pub mod finite;
pub mod inference;
pub mod gelu_grad;
pub mod torch_layout;
pub mod loss_guard;
pub mod kink;
pub mod hparams;
pub mod same_padding;
pub mod clip_norm;
pub mod attend_mask;
pub mod store_origin;
pub mod same_shape;
pub mod padding_mask;
pub mod load_check;
pub mod padding_idx;
