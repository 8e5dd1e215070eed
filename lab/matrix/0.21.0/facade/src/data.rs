//! burn 0.22's data loading: a `Batcher` and a `DataLoader` that name no backend, and loaders whose
//! iterators yield `Result`s (0.21's yield the batches). Each wraps 0.21's, which does the work.
pub use burn021::data::*;

/// 0.22's `dataloader`.
pub mod dataloader {
    pub use burn021::data::dataloader::*;

    use std::sync::Arc;

    use burn021::data::dataloader as upstream;

    /// 0.22's `batcher`.
    pub mod batcher {
        /// 0.22's `Batcher` (no backend parameter).
        pub trait Batcher<I, O>: Send + Sync {
            fn batch(&self, items: Vec<I>, device: &crate::tensor::Device) -> O;
        }
    }

    use batcher::Batcher;

    /// A 0.22 batcher, as 0.21's.
    struct UpstreamBatcher<T>(T);

    impl<I, O, T: Batcher<I, O>> upstream::batcher::Batcher<crate::Backend, I, O> for UpstreamBatcher<T> {
        fn batch(&self, items: Vec<I>, device: &crate::tensor::Device) -> O {
            self.0.batch(items, device)
        }
    }

    /// What 0.22's loader iterators yield on error: 0.21's never fail.
    #[derive(Debug)]
    pub enum Never {}

    /// 0.22's `DataLoader` (no backend parameter; items are `Result`s).
    pub trait DataLoader<O>: Send + Sync {
        fn iter<'a>(&'a self) -> Box<dyn Iterator<Item = Result<O, Never>> + 'a>;
        fn num_items(&self) -> usize;
        /// The 0.21 loader inside (the burn-train facade hands it to 0.21's training).
        #[doc(hidden)]
        fn upstream(&self) -> Arc<dyn upstream::DataLoader<crate::Backend, O>>;
    }

    struct Loader<O>(Arc<dyn upstream::DataLoader<crate::Backend, O>>);

    impl<O: 'static> DataLoader<O> for Loader<O> {
        fn iter<'a>(&'a self) -> Box<dyn Iterator<Item = Result<O, Never>> + 'a> {
            Box::new(self.0.iter().map(Ok))
        }

        fn num_items(&self) -> usize {
            self.0.num_items()
        }

        fn upstream(&self) -> Arc<dyn upstream::DataLoader<crate::Backend, O>> {
            self.0.clone()
        }
    }

    /// 0.22's `DataLoaderBuilder` (no backend parameter).
    pub struct DataLoaderBuilder<I, O>(upstream::DataLoaderBuilder<crate::Backend, I, O>);

    impl<I, O> DataLoaderBuilder<I, O>
    where
        I: Send + Sync + Clone + std::fmt::Debug + 'static,
        O: Send + Clone + std::fmt::Debug + 'static,
    {
        pub fn new<T: Batcher<I, O> + 'static>(batcher: T) -> Self {
            Self(upstream::DataLoaderBuilder::new(UpstreamBatcher(batcher)))
        }

        pub fn batch_size(self, batch_size: usize) -> Self {
            Self(self.0.batch_size(batch_size))
        }

        pub fn shuffle(self, seed: u64) -> Self {
            Self(self.0.shuffle(seed))
        }

        pub fn num_workers(self, num_workers: usize) -> Self {
            Self(self.0.num_workers(num_workers))
        }

        pub fn set_device(self, device: crate::tensor::Device) -> Self {
            Self(self.0.set_device(device))
        }

        pub fn build<D: burn021::data::dataset::Dataset<I> + 'static>(self, dataset: D) -> Arc<dyn DataLoader<O>> {
            Arc::new(Loader(self.0.build(dataset)))
        }
    }
}
