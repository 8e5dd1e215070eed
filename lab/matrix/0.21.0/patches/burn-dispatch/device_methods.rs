//! burn 0.22's `Device` methods on burn 0.21's `DispatchDevice` (the facade's `Device`).
use crate::DispatchDevice;

impl DispatchDevice {
    /// 0.22's `Device::flex()`.
    pub fn flex() -> Self {
        Self::Flex(Default::default())
    }

    /// 0.22's `Device::ndarray()`.
    pub fn ndarray() -> Self {
        Self::NdArray(Default::default())
    }

    /// 0.22's `is_autodiff()`: what 0.21's `Dispatch::ad_enabled` reads.
    pub fn is_autodiff(&self) -> bool {
        matches!(self, Self::Autodiff(_))
    }

    /// 0.22's `without_autodiff()`: the device inside an autodiff one.
    pub fn without_autodiff(self) -> Self {
        match self {
            Self::Autodiff(device) => *device.inner,
            device => device,
        }
    }

    /// 0.22's `inner()`, the same as `without_autodiff()`.
    pub fn inner(self) -> Self {
        self.without_autodiff()
    }
}

impl DispatchDevice {
    /// 0.22's `seed()`: 0.21's `Dispatch::seed`.
    pub fn seed(&self, seed: u64) {
        <crate::Dispatch as burn_backend::Backend>::seed(self, seed)
    }

    /// 0.22's `settings()`: 0.21's `get_device_settings`.
    pub fn settings(&self) -> burn_backend::DeviceSettings {
        burn_backend::get_device_settings::<crate::Dispatch>(self)
    }

    /// 0.22's `configure(IntDType)` (the one setting the lab configures): 0.21's
    /// `set_default_int_dtype`.
    pub fn configure(&mut self, int_dtype: impl Into<burn_backend::IntDType>) -> Result<(), burn_backend::DeviceError> {
        burn_backend::set_default_int_dtype::<crate::Dispatch>(self, int_dtype)
    }
}
