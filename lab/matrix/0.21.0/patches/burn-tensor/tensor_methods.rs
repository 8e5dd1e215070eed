//! burn 0.22's names for burn 0.21's tensor operations: each calls the 0.21 operation it renames.
use burn_backend::tensor::{Bool, Ordered};
use burn_backend::{AutodiffBackend, Backend, ElementConversion};

use crate::Tensor;

impl<B: Backend, const D: usize, K: Ordered<B>> Tensor<B, D, K> {
    /// 0.22's `greater_scalar`: 0.21's `greater_elem`.
    pub fn greater_scalar<E: ElementConversion>(self, other: E) -> Tensor<B, D, Bool> {
        self.greater_elem(other)
    }

    /// 0.22's `greater_equal_scalar`: 0.21's `greater_equal_elem`.
    pub fn greater_equal_scalar<E: ElementConversion>(self, other: E) -> Tensor<B, D, Bool> {
        self.greater_equal_elem(other)
    }

    /// 0.22's `lower_scalar`: 0.21's `lower_elem`.
    pub fn lower_scalar<E: ElementConversion>(self, other: E) -> Tensor<B, D, Bool> {
        self.lower_elem(other)
    }

    /// 0.22's `lower_equal_scalar`: 0.21's `lower_equal_elem`.
    pub fn lower_equal_scalar<E: ElementConversion>(self, other: E) -> Tensor<B, D, Bool> {
        self.lower_equal_elem(other)
    }
}

impl<B: AutodiffBackend<InnerBackend = B>, const D: usize> Tensor<B, D> {
    /// 0.22's `autodiff()` (a tensor of the inner backend on the autodiff one): 0.21's
    /// `from_inner`, on a backend that is its own inner backend (`Dispatch`).
    pub fn autodiff(self) -> Self {
        Tensor::from_inner(self)
    }
}
