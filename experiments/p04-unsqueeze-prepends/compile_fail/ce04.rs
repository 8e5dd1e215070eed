//! ce04: the direct port of `F.mse_loss(pred, y)` with a [B, 1] prediction and a [B] target. burn
//! has no implicit rank-extending broadcast: the loss takes both as `Tensor<D>`, so rustc rejects
//! it (burn's `MseLoss::forward` and pita's `same_shape::mse_loss` alike). The usual way out,
//! `y.unsqueeze()`, compiles and broadcasts [B, 1] against [1, B] (see p04).
use burn::tensor::{Device, Tensor};
use pita_lab::inputs::ramp;
use pita::same_shape::mse_loss;

fn main() {
    let device = Device::flex().autodiff();
    let pred = Tensor::<1>::from_floats(ramp(4, 0).as_slice(), &device).reshape([4, 1]);
    let y = Tensor::<1>::from_floats(ramp(4, 4).as_slice(), &device);

    let _loss = mse_loss(pred, y);
}
