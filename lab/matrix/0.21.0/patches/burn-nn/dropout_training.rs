//! burn 0.22's `Dropout::training` flag, as burn 0.21 behaves: 0.21 has no training switch on the
//! module (a dropout is active on every autodiff device), so the flag reads enabled, always.

/// What `dropout.training` reads on burn 0.21.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AlwaysTraining;

impl AlwaysTraining {
    /// 0.22's `Flag::is_enabled`: on 0.21 only the device decides, so enabled.
    pub const fn is_enabled(&self) -> bool {
        true
    }
}
