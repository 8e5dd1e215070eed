//! burn 0.22's optional LSTM gates (`forget_gate: Option<GateController>`, for a coupled LSTM)
//! read on burn 0.21, whose LSTM always has each gate: `gate.as_ref()` gives `Some(gate)`.
use burn_core::tensor::backend::Backend;

use crate::GateController;

impl<B: Backend> GateController<B> {
    /// 0.22's `Option::as_ref` on an optional gate: 0.21's gate is always there.
    pub fn as_ref(&self) -> Option<&Self> {
        Some(self)
    }
}
