//! ce29a: PyTorch's `track_running_stats=False`, written as a `BatchNormConfig` option: there is none.
use burn::nn::BatchNormConfig;
use burn::tensor::Device;

fn main() {
    let device = Device::flex().autodiff();
    let _norm = BatchNormConfig::new(2).with_track_running_stats(false).init(&device);
}
