//! PyTorch's `nn.Embedding(padding_idx=...)` for burn's `Embedding`, which has no such option:
//! the padding row is looked up as usual but receives no gradient. A fix, not a guard.

use burn::nn::Embedding;
use burn::tensor::{Int, Tensor};

// book:begin embedding_with_padding_idx
/// `embedding.forward(ids)`, except that positions holding `padding_idx` pass no gradient to
/// the weight: their lookups are detached, as PyTorch does for `padding_idx`. Cost: the lookup
/// plus one comparison and one `mask_where` on the device.
pub fn embedding_with_padding_idx(embedding: &Embedding, ids: Tensor<2, Int>, padding_idx: i64) -> Tensor<3> {
    let [batch, seq] = ids.dims();
    let d_model = embedding.weight.dims()[1];
    let is_pad = ids.clone().equal_elem(padding_idx).unsqueeze_dim::<3>(2).expand([batch, seq, d_model]);
    let looked_up = embedding.forward(ids);
    looked_up.clone().mask_where(is_pad, looked_up.detach())
}
// book:end

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::Param;
    use burn::tensor::Device;

    #[test]
    fn padding_row_gets_no_gradient_and_keeps_its_value() {
        let device = Device::flex().autodiff();
        let weight = Tensor::<2>::from_floats([[0.5, -0.5], [1.0, 2.0], [3.0, 4.0]], &device).require_grad();
        let embedding = Embedding { weight: Param::from_tensor(weight) };
        let ids = Tensor::<2, Int>::from_ints([[0, 1, 0, 2]], &device);
        let out = embedding_with_padding_idx(&embedding, ids, 0);
        let looked_up = out.clone().into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(&looked_up[..2], &[0.5, -0.5]);
        let grads = out.sum().backward();
        let grad = embedding.weight.val().grad(&grads).unwrap().into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(grad, vec![0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
    }
}
