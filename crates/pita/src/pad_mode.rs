//! PyTorch's conv `padding_mode` for burn, whose convolutions pad with zeros only: pad the input
//! the way PyTorch does, then convolve with `PaddingConfig*::Valid`. A fix, not a guard.
//!
//! burn's `Tensor::pad` has `PadMode::Reflect` (PyTorch's `'reflect'`) and `PadMode::Edge`
//! (`'replicate'`) but no circular mode; [`pad_like_torch`] does `'circular'` with slices and a
//! concatenation, and the other modes with `Tensor::pad`. Its `Result` form is
//! [`try_pad_like_torch`].

use burn::tensor::ops::PadMode;
use burn::tensor::Tensor;

use crate::Error;

/// PyTorch's `padding_mode` of `nn.Conv1d/2d/3d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TorchPaddingMode {
    /// `'zeros'`, the default: what burn's convolutions do themselves.
    Zeros,
    /// `'reflect'`: mirrored at the edge, the edge value not repeated (burn's `PadMode::Reflect`).
    Reflect,
    /// `'replicate'`: the edge value repeated (burn's `PadMode::Edge`).
    Replicate,
    /// `'circular'`: wrapped around from the other side (no burn `PadMode`).
    Circular,
}

// book:begin pad_like_torch
/// `x` padded as a PyTorch convolution with `padding_mode = mode` pads it: `padding[i]` elements
/// on both sides of each of the last `padding.len()` axes (the spatial axes: `[1, 1]` for a
/// Conv2d with `padding=1`). Convolve the result with `Valid` padding.
///
/// Panics where PyTorch refuses the padding: `Reflect` not smaller than the axis, `Circular`
/// larger than the axis, `Replicate` of an empty axis, or more padded axes than `x` has.
/// Cost: one padded copy of `x` on the device (`Circular`: two slices and a concatenation per axis).
#[track_caller]
pub fn pad_like_torch<const D: usize>(x: Tensor<D>, padding: &[usize], mode: TorchPaddingMode) -> Tensor<D> {
    match try_pad_like_torch(x, padding, mode) {
        Ok(padded) => padded,
        Err(error) => panic!("{error}"),
    }
}

/// [`pad_like_torch`] returning [`Error::Check`] instead of panicking. Same cost.
pub fn try_pad_like_torch<const D: usize>(x: Tensor<D>, padding: &[usize], mode: TorchPaddingMode) -> Result<Tensor<D>, Error> {
    check_padding(&x.dims(), padding, mode)?;
    let pairs: Vec<(usize, usize)> = padding.iter().map(|&p| (p, p)).collect();
    Ok(match mode {
        TorchPaddingMode::Zeros => x.pad(pairs, PadMode::Constant(0.0)),
        TorchPaddingMode::Reflect => x.pad(pairs, PadMode::Reflect),
        TorchPaddingMode::Replicate => x.pad(pairs, PadMode::Edge),
        TorchPaddingMode::Circular => {
            let first = D - padding.len();
            padding.iter().enumerate().fold(x, |x, (i, &p)| wrap(x, first + i, p))
        }
    })
}

/// `'circular'` along one axis: the last `p` elements before, the first `p` after.
fn wrap<const D: usize>(x: Tensor<D>, axis: usize, p: usize) -> Tensor<D> {
    if p == 0 {
        return x;
    }
    let size = x.dims()[axis];
    let tail = x.clone().narrow(axis, size - p, p);
    let head = x.clone().narrow(axis, 0, p);
    Tensor::cat(vec![tail, x, head], axis)
}
// book:end

fn check_padding(dims: &[usize], padding: &[usize], mode: TorchPaddingMode) -> Result<(), Error> {
    let fail = |message: String| Err(Error::check("pad_mode::try_pad_like_torch", message));
    if padding.len() > dims.len() {
        return fail(format!("{} padded axes for a tensor of {} axes", padding.len(), dims.len()));
    }
    let spatial = &dims[dims.len() - padding.len()..];
    for (axis, (&p, &size)) in padding.iter().zip(spatial).enumerate() {
        let refused = match mode {
            TorchPaddingMode::Zeros => None,
            TorchPaddingMode::Reflect if p >= size => Some("reflect padding must be smaller than the axis"),
            TorchPaddingMode::Circular if p > size => Some("circular padding must not exceed the axis (it would wrap more than once)"),
            TorchPaddingMode::Replicate if p > 0 && size == 0 => Some("replicate padding of an empty axis"),
            _ => None,
        };
        if let Some(why) = refused {
            return fail(format!("{why}: padding {p} on spatial axis {axis} of size {size}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

    fn row(values: &[f32]) -> Tensor<2> {
        Tensor::<1>::from_floats(values, &Device::flex()).reshape([1, values.len()])
    }

    fn values<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
        tensor.into_data().try_to_vec::<f32>().unwrap()
    }

    #[test]
    fn pads_the_last_axis_in_each_mode_like_torch() {
        // torch.nn.functional.pad(torch.tensor([[[1., 2., 3., 4.]]]), (2, 2), mode=...)
        let x = || row(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(values(pad_like_torch(x(), &[2], TorchPaddingMode::Zeros)), [0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0]);
        assert_eq!(values(pad_like_torch(x(), &[2], TorchPaddingMode::Reflect)), [3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 2.0]);
        assert_eq!(values(pad_like_torch(x(), &[2], TorchPaddingMode::Replicate)), [1.0, 1.0, 1.0, 2.0, 3.0, 4.0, 4.0, 4.0]);
        assert_eq!(values(pad_like_torch(x(), &[2], TorchPaddingMode::Circular)), [3.0, 4.0, 1.0, 2.0, 3.0, 4.0, 1.0, 2.0]);
    }

    #[test]
    fn circular_wraps_both_spatial_axes() {
        // [[1, 2], [3, 4]] wrapped by one on each side: the corners come from the opposite corner.
        let x = Tensor::<1>::from_floats([1.0, 2.0, 3.0, 4.0], &Device::flex()).reshape([1, 1, 2, 2]);
        let padded = pad_like_torch(x, &[1, 1], TorchPaddingMode::Circular);
        assert_eq!(padded.dims(), [1, 1, 4, 4]);
        assert_eq!(values(padded), [4.0, 3.0, 4.0, 3.0, 2.0, 1.0, 2.0, 1.0, 4.0, 3.0, 4.0, 3.0, 2.0, 1.0, 2.0, 1.0]);
    }

    #[test]
    #[should_panic(expected = "reflect padding must be smaller than the axis: padding 4 on spatial axis 0 of size 4")]
    fn refuses_reflect_padding_as_large_as_the_axis() {
        pad_like_torch(row(&[1.0, 2.0, 3.0, 4.0]), &[4], TorchPaddingMode::Reflect);
    }

    #[test]
    fn the_result_form_refuses_circular_padding_that_wraps_twice() {
        let error = try_pad_like_torch(row(&[1.0, 2.0]), &[3], TorchPaddingMode::Circular).unwrap_err();
        assert!(error.to_string().starts_with("circular padding must not exceed the axis"), "{error}");
        assert!(try_pad_like_torch(row(&[1.0, 2.0]), &[2], TorchPaddingMode::Circular).is_ok());
    }
}
