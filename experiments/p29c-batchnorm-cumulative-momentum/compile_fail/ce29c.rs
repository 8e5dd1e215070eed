//! ce29c: PyTorch's `momentum=None`, written as BatchNormConfig's momentum: it is an f64, not an Option.
use burn::nn::BatchNormConfig;
use burn::tensor::Device;

fn main() {
    let device = Device::flex().autodiff();
    let _norm = BatchNormConfig::new(2).with_momentum(None).init(&device);
}
