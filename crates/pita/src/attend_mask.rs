//! A boolean attention mask that says what it means. PyTorch's `scaled_dot_product_attention`
//! reads `True` as "attend"; burn's `attention` reads `true` as "mask out". Wrapping the mask in
//! [`AttendMask`] makes a port state which one it holds: a bare `Tensor<4, Bool>` does not compile.
//! A fix, not a guard: [`sdpa`] computes what PyTorch's SDPA computes.

use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Tensor};

// book:begin attend_mask
/// `true` = this query may attend to this key (PyTorch SDPA's boolean `attn_mask`).
pub struct AttendMask(pub Tensor<4, Bool>);

/// `scaled_dot_product_attention(q, k, v, attn_mask=mask)` with PyTorch's mask meaning.
///
/// Cost: burn's attention plus one elementwise `not` of the mask.
pub fn sdpa(query: Tensor<4>, key: Tensor<4>, value: Tensor<4>, mask: AttendMask) -> Tensor<4> {
    // burn's mask is true = masked out: the complement of PyTorch's.
    attention(query, key, value, Some(mask.0.bool_not()), None, AttentionModuleOptions::default())
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::Device;

    #[test]
    fn attends_only_where_the_mask_is_true() {
        let device = Device::flex();
        let query = Tensor::<4>::zeros([1, 1, 1, 2], &device);
        let key = Tensor::<4>::zeros([1, 1, 3, 2], &device);
        let value = Tensor::<1>::from_floats([1.0, 2.0, 3.0], &device).reshape([1, 1, 3, 1]);
        let mask = Tensor::<1, Bool>::from_bool(burn::tensor::TensorData::from([true, false, false]), &device).reshape([1, 1, 1, 3]);
        let out = sdpa(query, key, value, AttendMask(mask));
        assert_eq!(out.into_data().try_to_vec::<f32>().unwrap(), vec![1.0]);
    }
}
