//! torchvision's ResNet-18 (`../pytorch.py`), ported to burn with burn's own modules. Every
//! field is named as the torchvision attribute it ports, so burn's module paths
//! (`layer2.0.downsample.1.gamma`) are PyTorch's `named_parameters()` names once burn-store's
//! PyTorch adapter renames BatchNorm's `weight`/`bias` to `gamma`/`beta` and transposes the Linear:
//! `Vec` elements are numbered as `nn.Sequential`'s, and a tuple's fields are `0`, `1`.
//!
//! Each forward taps its output under the PyTorch module path, in the order PyTorch's forward
//! hooks fire: a module's output when its call ends, a child before its parent.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Dropout, DropoutConfig, Linear, LinearConfig, PaddingConfig2d, Relu};
use burn::tensor::{Device, Tensor};

use pita::record::tap;

use crate::Plants;

/// The sizes of `pytorch.py`.
pub const CLASSES: usize = 10;
pub const DROPOUT: f64 = 0.2;
/// torchvision's `resnet18`: two BasicBlocks per stage, these widths.
const WIDTHS: [usize; 4] = [64, 128, 256, 512];

/// A `k×k` convolution without bias, as torchvision's (each one feeds a BatchNorm, which
/// subtracts any constant a bias would add); burn's `Conv2dConfig` has a bias by default.
fn conv(channels: [usize; 2], kernel: usize, stride: usize, padding: usize, plants: &Plants, device: &Device) -> Conv2d {
    let config = Conv2dConfig::new(channels, [kernel, kernel])
        .with_stride([stride, stride])
        .with_padding(PaddingConfig2d::Explicit(padding, padding, padding, padding));
    let config = if plants.has("conv-bias") { config } else { config.with_bias(false) };
    config.init(device)
}

/// `nn.BatchNorm2d(channels)`: epsilon 1e-5 and momentum 0.1, burn's defaults and PyTorch's (both
/// update `running = (1 - m)·running + m·batch`).
fn norm(channels: usize, plants: &Plants, device: &Device) -> BatchNorm {
    let config = BatchNormConfig::new(channels);
    let config = if plants.has("bn-eps") { config.with_epsilon(1e-3) } else { config }; // Keras's default epsilon
    config.init(device)
}

/// A training-mode BatchNorm call as PyTorch makes it. burn updates `running_var` with the biased
/// batch variance (divided by n), PyTorch with the unbiased one (divided by n - 1, p27): redo the
/// update's batch term `running_var - (1 - m)·before`, scaled by n / (n - 1), n the values per
/// channel (batch × height × width).
fn batch_norm(norm: &BatchNorm, x: Tensor<4>, plants: &Plants) -> Tensor<4> {
    let [batch, _, height, width] = x.dims();
    let before = norm.running_var.value_sync();
    let y = norm.forward(x);
    if !plants.has("bn-biased-running-var") {
        let n = (batch * height * width) as f64;
        let keep = before.mul_scalar(1.0 - norm.momentum);
        let batch_term = norm.running_var.value_sync() - keep.clone();
        norm.running_var.update(keep + batch_term.mul_scalar(n / (n - 1.0)));
    }
    y
}

/// torchvision's `BasicBlock`: conv3x3 (stride s), BN, ReLU, conv3x3, BN, plus the input (through
/// `downsample`, conv1x1 stride s and BN, where the shape changes), ReLU. `relu` is one module
/// called twice, as in torchvision (`act/layer1.0.relu`, `act/layer1.0.relu#2`).
#[derive(Module, Debug)]
pub struct BasicBlock {
    pub conv1: Conv2d,
    pub bn1: BatchNorm,
    pub relu: Relu,
    pub conv2: Conv2d,
    pub bn2: BatchNorm,
    pub downsample: Option<(Conv2d, BatchNorm)>,
}

impl BasicBlock {
    fn new(inplanes: usize, planes: usize, stride: usize, plants: &Plants, device: &Device) -> Self {
        let downsample = (stride != 1 || inplanes != planes)
            .then(|| (conv([inplanes, planes], 1, stride, 0, plants, device), norm(planes, plants, device)));
        BasicBlock {
            conv1: conv([inplanes, planes], 3, stride, 1, plants, device),
            bn1: norm(planes, plants, device),
            relu: Relu::new(),
            conv2: conv([planes, planes], 3, 1, 1, plants, device),
            bn2: norm(planes, plants, device),
            downsample,
        }
    }

    fn forward(&self, x: Tensor<4>, path: &str, plants: &Plants) -> Tensor<4> {
        let out = self.conv1.forward(x.clone());
        pita::tap!("{path}.conv1", &out);
        let out = batch_norm(&self.bn1, out, plants);
        pita::tap!("{path}.bn1", &out);
        let out = self.relu.forward(out);
        pita::tap!("{path}.relu", &out);
        let out = self.conv2.forward(out);
        pita::tap!("{path}.conv2", &out);
        let out = batch_norm(&self.bn2, out, plants);
        pita::tap!("{path}.bn2", &out);
        let identity = match &self.downsample {
            Some((conv, bn)) => {
                let y = conv.forward(x);
                pita::tap!("{path}.downsample.0", &y);
                let y = batch_norm(bn, y, plants);
                pita::tap!("{path}.downsample.1", &y);
                pita::tap!("{path}.downsample", &y);
                y
            }
            None => x,
        };
        let out = self.relu.forward(out + identity);
        pita::tap!("{path}.relu", &out); // the second call: act/<path>.relu#2
        tap(path, &out);
        out
    }
}

/// torchvision's `ResNet` with `BasicBlock`, `[2, 2, 2, 2]` (resnet18), and the fine-tuning head
/// `fc = Sequential(Dropout(0.2), Linear(512, 10))`.
#[derive(Module, Debug)]
pub struct ResNet {
    pub conv1: Conv2d,
    pub bn1: BatchNorm,
    pub relu: Relu,
    pub maxpool: MaxPool2d,
    pub layer1: Vec<BasicBlock>,
    pub layer2: Vec<BasicBlock>,
    pub layer3: Vec<BasicBlock>,
    pub layer4: Vec<BasicBlock>,
    pub avgpool: AdaptiveAvgPool2d,
    pub fc: (Dropout, Linear),
}

impl ResNet {
    /// A model of the right shapes; its values are replaced by the PyTorch weights when loaded.
    pub fn new(plants: &Plants, device: &Device) -> Self {
        let mut inplanes = WIDTHS[0];
        let mut layer = |planes: usize, stride: usize| {
            let first = BasicBlock::new(inplanes, planes, stride, plants, device);
            inplanes = planes;
            vec![first, BasicBlock::new(planes, planes, 1, plants, device)]
        };
        let (layer1, layer2, layer3, layer4) = (layer(WIDTHS[0], 1), layer(WIDTHS[1], 2), layer(WIDTHS[2], 2), layer(WIDTHS[3], 2));
        // nn.MaxPool2d(kernel_size=3, stride=2, padding=1); burn's MaxPool2dConfig pads nothing
        // by default, and its stride defaults to the kernel size.
        let maxpool = MaxPool2dConfig::new([3, 3]).with_strides([2, 2]);
        let maxpool = if plants.has("maxpool-no-padding") { maxpool } else { maxpool.with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1)) };
        ResNet {
            conv1: conv([3, WIDTHS[0]], 7, 2, 3, plants, device),
            bn1: norm(WIDTHS[0], plants, device),
            relu: Relu::new(),
            maxpool: maxpool.init(),
            layer1,
            layer2,
            layer3,
            layer4,
            avgpool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            fc: (DropoutConfig::new(DROPOUT).init(), LinearConfig::new(WIDTHS[3], CLASSES).init(device)),
        }
    }

    /// images `[batch, 3, height, width]` -> logits `[batch, classes]`, in training mode (batch
    /// statistics, running statistics updated, dropout on).
    pub fn forward(&self, images: Tensor<4>, plants: &Plants) -> Tensor<2> {
        let x = self.conv1.forward(images);
        tap("conv1", &x);
        let x = batch_norm(&self.bn1, x, plants);
        tap("bn1", &x);
        let x = self.relu.forward(x);
        tap("relu", &x);
        let mut x = self.maxpool.forward(x);
        tap("maxpool", &x);
        for (name, layer) in [("layer1", &self.layer1), ("layer2", &self.layer2), ("layer3", &self.layer3), ("layer4", &self.layer4)] {
            for (i, block) in layer.iter().enumerate() {
                x = block.forward(x, &format!("{name}.{i}"), plants);
            }
            tap(name, &x);
        }
        let x = self.avgpool.forward(x);
        tap("avgpool", &x);
        let x = x.flatten::<2>(1, 3);
        let (dropout, linear) = &self.fc;
        let x = pita::replay::dropout("fc.0", dropout, x); // the reference's mask while a replay is active
        tap("fc.0", &x);
        let logits = linear.forward(x);
        tap("fc.1", &logits);
        tap("fc", &logits);
        logits
    }
}
