//! Helpers shared by pita's burn experiments (`pita-t`) and by users checking their own ports.
//!
//! - [`inputs`]: the deterministic input ramp and the hash both sides record.
//! - [`dump`]: writes tensors as safetensors plus the readable JSON form (docs/dump-format.md).
//! - [`guard`]: runtime guards such as [`guard::backward_scalar`].
//! - [`args`]: the command line every experiment binary shares.

pub mod args;
pub mod dump;
pub mod guard;
pub mod inputs;

pub use burn;

/// The burn version Cargo.lock resolved when this crate was built.
pub const BURN_VERSION: &str = env!("PITA_BURN_VERSION");
