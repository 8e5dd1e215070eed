//! ce25: an evaluation function that takes `&Inference<M>` refuses the training model.
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::{Device, Tensor};
use pita::inference::Inference;

fn evaluate(model: &Inference<Dropout>, x: Tensor<2>) -> Tensor<2> {
    model.model().forward(x)
}

fn main() {
    let device = Device::flex().autodiff();
    let model: Dropout = DropoutConfig::new(0.5).init();
    let x = Tensor::<2>::ones([2, 4], &device);
    let _out = evaluate(&model, x); // the training model, not Inference::new(&model)
}
