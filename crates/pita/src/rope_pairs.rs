//! RoPE pairing for q/k projections ported from HF transformers (LLaMA, Qwen, Mistral): their
//! `rotate_half` rotates dimension `i` of a head together with `i + head_dim/2`; burn's
//! `RotaryEncoding` rotates `2i` together with `2i + 1` (GPT-J's and Meta's layout). A fix, not
//! a guard: reorder the projection's outputs so that burn's pairs are HF's pairs. The attention
//! scores are then PyTorch's; the rotated q and k hold PyTorch's values in the reordered
//! positions, which `q·k` does not see. Only q and k: v and the output projection stay as they are.
//!
//! Each function has a panicking form (`#[track_caller]`) and a `try_*` form returning
//! [`Error::Check`] with the same message.

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Int, Tensor};

use crate::Error;

// book:begin rotate_half_order
/// The order of a q or k projection's outputs under which burn's `RotaryEncoding` rotates the
/// pairs `rotate_half` rotates: output `r` of the reordered projection is PyTorch's output
/// `order[r]`. Per head `[0, h, 1, h + 1, …, h − 1, 2h − 1]` with `h = head_dim / 2`, offset
/// by `head · head_dim`. Panics on an odd `head_dim`. Cost: O(heads · head_dim) on the host.
#[track_caller]
pub fn rotate_half_order(heads: usize, head_dim: usize) -> Vec<usize> {
    match try_rotate_half_order(heads, head_dim) {
        Ok(order) => order,
        Err(error) => panic!("{error}"),
    }
}

/// [`rotate_half_order`] returning [`Error::Check`] on an odd `head_dim`. Same cost.
pub fn try_rotate_half_order(heads: usize, head_dim: usize) -> Result<Vec<usize>, Error> {
    if !head_dim.is_multiple_of(2) {
        let message = format!("RoPE rotates pairs: head_dim must be even, got {head_dim}");
        return Err(Error::check("rope_pairs::try_rotate_half_order", message));
    }
    let half = head_dim / 2;
    let within_head = (0..head_dim).map(|r| r / 2 + (r % 2) * half);
    Ok((0..heads).flat_map(|head| within_head.clone().map(move |i| head * head_dim + i)).collect())
}
// book:end

// book:begin reorder_for_rotary
/// A q or k projection (a burn `Linear`, weight `[d_input, d_output]`) with its outputs in
/// [`rotate_half_order`]: weight columns and bias reordered. Panics when `d_output` is not
/// `heads · head_dim` or `head_dim` is odd. Cost: one `select` per parameter on the device;
/// the parameters are new (`Param::from_tensor`), so reorder before building the optimizer.
#[track_caller]
pub fn reorder_for_rotary(linear: Linear, heads: usize, head_dim: usize) -> Linear {
    match try_reorder_for_rotary(linear, heads, head_dim) {
        Ok(linear) => linear,
        Err(error) => panic!("{error}"),
    }
}

/// [`reorder_for_rotary`] returning [`Error::Check`] instead of panicking. Same cost.
pub fn try_reorder_for_rotary(linear: Linear, heads: usize, head_dim: usize) -> Result<Linear, Error> {
    let [_, d_output] = linear.weight.dims();
    if d_output != heads * head_dim {
        let message = format!("the projection has {d_output} outputs, not heads · head_dim = {heads} · {head_dim}");
        return Err(Error::check("rope_pairs::try_reorder_for_rotary", message));
    }
    let order = try_rotate_half_order(heads, head_dim)?;
    let device = linear.weight.device();
    let indices = Tensor::<1, Int>::from_ints(order.iter().map(|&i| i as i64).collect::<Vec<_>>().as_slice(), &device);
    // Detached: a new parameter must be a leaf of the autodiff graph (Param::from_tensor panics otherwise).
    Ok(Linear {
        weight: Param::from_tensor(linear.weight.val().select(1, indices.clone()).detach()),
        bias: linear.bias.map(|bias| Param::from_tensor(bias.val().select(0, indices).detach())),
    })
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::nn::{RotaryEncodingConfig, LinearConfig};
    use burn::tensor::{Device, TensorData};

    fn values<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
        tensor.into_data().try_to_vec::<f32>().unwrap()
    }

    #[test]
    fn interleaves_the_two_halves_of_each_head() {
        assert_eq!(rotate_half_order(1, 4), vec![0, 2, 1, 3]);
        assert_eq!(rotate_half_order(2, 6), vec![0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11]);
    }

    #[test]
    fn burn_rotates_each_reordered_dimension_with_its_rotate_half_partner() {
        // PyTorch's dimension j sits at burn position r with order[r] = j. burn's RotaryEncoding
        // at position 1 turns the unit vector at r into positions r and r ^ 1; the dimension at
        // r ^ 1 must be j's rotate_half partner, j ± head_dim/2.
        let (head_dim, device) = (6, Device::flex());
        let order = rotate_half_order(1, head_dim);
        let rope = RotaryEncodingConfig::new(2, head_dim).init(&device);
        for r in 0..head_dim {
            let mut unit = vec![0.0f32; 2 * head_dim];
            unit[head_dim + r] = 1.0; // position 1
            let rotated = values(rope.forward(Tensor::<3>::from_data(TensorData::new(unit, [1, 2, head_dim]), &device)));
            let moved: Vec<usize> = (0..head_dim).filter(|&c| c != r && rotated[head_dim + c] != 0.0).collect();
            assert_eq!(moved.len(), 1, "position {r} rotates into {moved:?}");
            assert_eq!((order[r] + head_dim / 2) % head_dim, order[moved[0]], "position {r}");
        }
    }

    #[test]
    fn reorders_weight_columns_and_bias() {
        let device = Device::flex();
        let mut fc = LinearConfig::new(1, 6).init(&device);
        fc.weight = Param::from_tensor(Tensor::<2>::from_floats([[10.0, 11.0, 12.0, 13.0, 14.0, 15.0]], &device));
        fc.bias = Some(Param::from_tensor(Tensor::<1>::from_floats([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &device)));
        let fc = reorder_for_rotary(fc, 1, 6);
        assert_eq!(values(fc.weight.val()), vec![10.0, 13.0, 11.0, 14.0, 12.0, 15.0]);
        assert_eq!(values(fc.bias.unwrap().val()), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    }

    #[test]
    fn reordered_parameters_train_on_an_autodiff_device() {
        let device = Device::flex().autodiff();
        let fc = reorder_for_rotary(LinearConfig::new(2, 4).init(&device), 1, 4);
        let grads = fc.forward(Tensor::<2>::ones([1, 2], &device)).sum().backward();
        assert!(fc.weight.val().grad(&grads).is_some() && fc.bias.unwrap().val().grad(&grads).is_some());
    }

    #[test]
    #[should_panic(expected = "head_dim must be even, got 5")]
    fn rejects_an_odd_head_dim() {
        rotate_half_order(1, 5);
    }

    #[test]
    fn the_result_form_names_the_sizes() {
        let fc = LinearConfig::new(2, 6).init(&Device::flex());
        let error = try_reorder_for_rotary(fc, 2, 4).unwrap_err();
        assert_eq!(error.to_string(), "the projection has 6 outputs, not heads · head_dim = 2 · 4");
    }
}
