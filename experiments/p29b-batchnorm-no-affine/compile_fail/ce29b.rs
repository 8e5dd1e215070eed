//! ce29b: PyTorch's `affine=False`, written as InstanceNormConfig's option: BatchNormConfig has none.
use burn::nn::BatchNormConfig;
use burn::tensor::Device;

fn main() {
    let device = Device::flex().autodiff();
    let _norm = BatchNormConfig::new(2).with_affine(false).init(&device);
}
