//! burn 0.22's API, spelled over burn 0.21: what the lab's programs name (`burn::tensor::Tensor<D>`,
//! `burn::nn::Linear`, `burn::tensor::Device`) as burn 0.21's types on its `Dispatch` backend, the
//! one backend whose autodiff is a property of the device, as in 0.22.
pub use burn021::*;

/// The backend every type of this facade is fixed to.
pub type Backend = burn021::Dispatch;

/// `pub type Name = upstream::Name<Backend>;` for each name: 0.22's non-generic spelling.
macro_rules! fixed_backend {
    ($upstream:ident; $($name:ident),* $(,)?) => { $(pub type $name = $upstream::$name<crate::Backend>;)* };
}

mod absent;
pub mod data;
pub mod lr_scheduler;
pub mod module;
pub mod optim;
pub mod store;

pub mod tensor {
    pub use burn021::tensor::*;
    pub type Tensor<const D: usize, K = Float> = burn021::tensor::Tensor<crate::Backend, D, K>;
    pub type Gradients = <crate::Backend as burn021::tensor::backend::AutodiffBackend>::Gradients;
    /// 0.22's `Device`: 0.21's `DispatchDevice`, with 0.22's methods (patches/burn-dispatch).
    pub use burn021::DispatchDevice as Device;
    pub use crate::assert_shape;

    /// burn 0.21's activations, and those 0.22 added (absent on 0.21).
    pub mod activation {
        pub use burn021::tensor::activation::*;
        use super::Tensor;

        pub fn relu6<const D: usize>(_tensor: Tensor<D>) -> Tensor<D> {
            crate::absent::api_absent("burn::tensor::activation::relu6")
        }

        pub fn hardtanh<const D: usize>(_tensor: Tensor<D>, _min_val: f64, _max_val: f64) -> Tensor<D> {
            crate::absent::api_absent("burn::tensor::activation::hardtanh")
        }
    }

    /// burn 0.21's module functions, with 0.22's `interpolate(x, options)` (the output size in
    /// the options) and those 0.22 added (absent on 0.21).
    pub mod module {
        pub use burn021::tensor::module::*;
        use super::Tensor;

        pub fn interpolate(x: Tensor<4>, options: super::ops::InterpolateOptions) -> Tensor<4> {
            let size = options.output_size.expect("interpolate: InterpolateOptions::output_size is not set");
            burn021::tensor::module::interpolate(x, size, options.into())
        }

        /// 0.22's `BatchNormTrainOutput`.
        pub struct BatchNormTrainOutput<const D: usize> {
            pub output: Tensor<D>,
            pub mean: Tensor<1>,
            pub var: Tensor<1>,
        }

        pub fn batch_norm_train<const D: usize>(_input: Tensor<D>, _gamma: Tensor<1>, _beta: Tensor<1>, _epsilon: f64) -> BatchNormTrainOutput<D> {
            crate::absent::api_absent("burn::tensor::module::batch_norm_train")
        }
    }

    /// burn 0.21's tensor ops, with 0.22's `InterpolateOptions` (which holds the output size).
    pub mod ops {
        pub use burn021::tensor::ops::*;

        /// 0.22's `InterpolateOptions`: 0.21's, and the output size 0.21 takes as an argument.
        #[derive(Debug, Clone)]
        pub struct InterpolateOptions {
            pub mode: InterpolateMode,
            pub align_corners: bool,
            pub output_size: Option<[usize; 2]>,
        }

        impl InterpolateOptions {
            pub fn new(mode: InterpolateMode) -> Self {
                let upstream = burn021::tensor::ops::InterpolateOptions::new(mode);
                Self { mode: upstream.mode, align_corners: upstream.align_corners, output_size: None }
            }
        }

        impl From<InterpolateOptions> for burn021::tensor::ops::InterpolateOptions {
            fn from(options: InterpolateOptions) -> Self {
                let mut upstream = burn021::tensor::ops::InterpolateOptions::new(options.mode);
                upstream.align_corners = options.align_corners;
                upstream
            }
        }
    }

    /// burn 0.22's tensor kinds: `Basic` is 0.21's `BasicOps` on the facade's backend.
    pub mod kind {
        pub trait Basic: burn021::tensor::BasicOps<crate::Backend> {}
        impl<K: burn021::tensor::BasicOps<crate::Backend>> Basic for K {}
    }
}

pub mod nn {
    pub use burn021::nn::*;
    use burn021::nn as upstream;
    fixed_backend!(upstream; BatchNorm, BiGru, BiLstm, BiRnn, Embedding, GateController, GroupNorm, Gru, InstanceNorm, LayerNorm,
        Linear, Lstm, PositionalEncoding, RmsNorm, Rnn, RotaryEncoding, SwiGlu, PRelu);
    pub type LstmState<const D: usize> = upstream::LstmState<crate::Backend, D>;
    pub type RnnState<const D: usize> = upstream::RnnState<crate::Backend, D>;
    pub mod loss {
        pub use burn021::nn::loss::*;
        use burn021::nn::loss as upstream;
        fixed_backend!(upstream; BinaryCrossEntropyLoss, CrossEntropyLoss);

        /// 0.22's `GaussianNLLLossConfig`: absent on 0.21.
        pub struct GaussianNLLLossConfig;

        /// 0.22's `GaussianNLLLoss`: absent on 0.21 (its config never builds one).
        pub struct GaussianNLLLoss {
            pub eps: f64,
            pub full: bool,
        }

        impl GaussianNLLLossConfig {
            #[allow(clippy::new_without_default)]
            pub fn new() -> Self {
                crate::absent::api_absent("burn::nn::loss::GaussianNLLLossConfig")
            }

            pub fn init(&self) -> GaussianNLLLoss {
                crate::absent::api_absent("burn::nn::loss::GaussianNLLLossConfig")
            }
        }

        impl GaussianNLLLoss {
            pub fn forward<const D: usize>(&self, _mean: crate::tensor::Tensor<D>, _target: crate::tensor::Tensor<D>, _var: crate::tensor::Tensor<D>,
                                           _reduction: Reduction) -> crate::tensor::Tensor<1> {
                crate::absent::api_absent("burn::nn::loss::GaussianNLLLoss")
            }
        }
    }
    pub mod attention {
        pub use burn021::nn::attention::*;
        use burn021::nn::attention as upstream;
        fixed_backend!(upstream; CrossAttention, CrossAttentionCache, MultiHeadAttention, MhaInput, MhaOutput, MhaCache, GeneratePaddingMask);
    }
    pub mod conv {
        pub use burn021::nn::conv::*;
        use burn021::nn::conv as upstream;
        fixed_backend!(upstream; Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d, DeformConv2d);
    }
    pub mod transformer {
        pub use burn021::nn::transformer::*;
        use burn021::nn::transformer as upstream;
        fixed_backend!(upstream; TransformerDecoder, TransformerDecoderInput, TransformerDecoderLayer, TransformerEncoder,
            TransformerEncoderInput, TransformerEncoderLayer, PositionWiseFeedForward);
    }
    pub mod activation {
        pub use burn021::nn::activation::*;
        use burn021::nn::activation as upstream;
        fixed_backend!(upstream; Activation, PRelu, SwiGlu);
    }
}

/// burn 0.22's `assert_shape!(tensor, [slot, ...])`: each slot an expression the axis must equal,
/// `_` for any; `..` once, first, for any leading axes.
#[macro_export]
macro_rules! assert_shape {
    ($tensor:expr, [.., $($slot:tt)*]) => {{
        let dims = $tensor.dims();
        let slots: usize = $crate::__count_slots!($($slot)*);
        assert!(dims.len() >= slots, "assert_shape!: rank {} < {} slots", dims.len(), slots);
        $crate::__assert_slots!(dims, dims.len() - slots, $($slot)*);
    }};
    ($tensor:expr, [$($slot:tt)*]) => {{
        let dims = $tensor.dims();
        $crate::__assert_slots!(dims, 0usize, $($slot)*);
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __assert_slots {
    ($dims:ident, $axis:expr, ) => {};
    ($dims:ident, $axis:expr, _ $(, $($rest:tt)*)?) => { $crate::__assert_slots!($dims, $axis + 1, $($($rest)*)?) };
    ($dims:ident, $axis:expr, $slot:expr $(, $($rest:tt)*)?) => {
        assert_eq!($dims[$axis], $slot, "assert_shape!: axis {} (dims {:?})", $axis, $dims);
        $crate::__assert_slots!($dims, $axis + 1, $($($rest)*)?)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __count_slots {
    () => { 0usize };
    (_ $(, $($rest:tt)*)?) => { 1usize + $crate::__count_slots!($($($rest)*)?) };
    ($slot:expr $(, $($rest:tt)*)?) => { 1usize + $crate::__count_slots!($($($rest)*)?) };
}
