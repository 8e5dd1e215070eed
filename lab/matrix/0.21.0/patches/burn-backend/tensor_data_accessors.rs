//! burn 0.22's `TensorData` accessors on burn 0.21's `TensorData`, each 0.21's own operation under
//! 0.22's name (0.22 made the fields private and the conversions fallible).
use alloc::vec::Vec;

use crate::{DType, DataError, Element, Shape, TensorData};
use burn_std::Bytes;

impl TensorData {
    /// 0.22's `shape()`: 0.21's `shape` field.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// 0.22's `dtype()`: 0.21's `dtype` field.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// 0.22's `into_parts()`: 0.21's fields.
    pub fn into_parts(self) -> (Bytes, Shape, DType) {
        (self.bytes, self.shape, self.dtype)
    }

    /// 0.22's `try_to_vec`: 0.21's `to_vec` (no conversion; an error for another element type).
    pub fn try_to_vec<E: Element>(&self) -> Result<Vec<E>, DataError> {
        self.to_vec()
    }

    /// 0.22's `try_into_vec`: 0.21's `into_vec`.
    pub fn try_into_vec<E: Element>(self) -> Result<Vec<E>, DataError> {
        self.into_vec()
    }

    /// 0.22's `try_to_vec_as`: converted to `E` first (0.21's `convert`).
    pub fn try_to_vec_as<E: Element>(&self) -> Result<Vec<E>, DataError> {
        self.clone().convert::<E>().into_vec()
    }

    /// 0.22's `try_cast`: 0.21's `convert_dtype`.
    pub fn try_cast(self, dtype: DType) -> Result<TensorData, DataError> {
        Ok(self.convert_dtype(dtype))
    }
}
