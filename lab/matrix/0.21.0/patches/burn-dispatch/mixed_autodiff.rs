//! burn 0.21's `Dispatch` keeps int and bool tensors plain on an autodiff device, so their
//! conversion to float (`one_hot(..).float()`, `mask.float()`) is a plain float, which 0.21's binary
//! float ops refuse beside an autodiff one ("not on the same backend"), and an attention mask is
//! refused beside autodiff floats. On 0.21's `Autodiff<Flex>` backend (what 0.21 ports use) the same
//! conversion is an autodiff constant and the mask is accepted: the plain operand is lifted the same
//! way (`from_inner`: a constant, no gradient), so a program computes what it would there.
use crate::{DispatchTensor, DispatchTensorKind};

pub(crate) fn lift_mixed_autodiff(lhs: DispatchTensor, rhs: DispatchTensor) -> (DispatchTensor, DispatchTensor) {
    #[cfg(feature = "autodiff")]
    {
        use burn_backend::AutodiffBackend;
        let autodiff = |t: &DispatchTensor| matches!(t.kind, DispatchTensorKind::Autodiff(_));
        match (autodiff(&lhs), autodiff(&rhs)) {
            (true, false) => return (lhs, <crate::Dispatch as AutodiffBackend>::from_inner(rhs)),
            (false, true) => return (<crate::Dispatch as AutodiffBackend>::from_inner(lhs), rhs),
            _ => {}
        }
    }
    (lhs, rhs)
}
