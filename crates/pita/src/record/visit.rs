//! burn's module traversal, naming each float tensor ([`naming`](super::naming)) and packing the
//! blocks of the tensors PyTorch packs.

use std::any::Any;

use burn::module::{ModuleVisitor, Param};
#[cfg(feature = "autodiff")]
use burn::tensor::Gradients;
use burn::tensor::Tensor;

use super::naming::{burn_naming, torch_naming, Naming, Renames};
use super::Entry;

/// How a recorder names what it records: burn's or PyTorch's names, the renames the weights
/// were loaded with, and a prefix.
#[derive(Debug, Default, Clone)]
pub(super) struct Names {
    pub torch: bool,
    /// Linear weights recorded alone keep burn's `[in, out]` under `torch`
    /// ([`Recorder::transpose_linears`](super::Recorder::transpose_linears)`(false)`).
    pub keep_linear_layout: bool,
    /// burn's TransformerEncoderLayers are pre-norm ([`Recorder::norm_first`](super::Recorder::norm_first)).
    pub norm_first: bool,
    pub renames: Renames,
    pub prefix: String,
}

impl Names {
    /// The naming of the tensor at burn's `path`, its prefix included.
    pub(super) fn naming(&self, path: &[String], containers: &[String], rank: usize) -> Naming {
        let mut naming = match self.torch {
            true => torch_naming(path, containers, rank, self.norm_first),
            false => burn_naming(path, containers),
        };
        if let Some(loaded_from) = self.torch.then(|| self.renames.loaded_from(path, containers)).flatten() {
            naming.path = loaded_from.to_string();
            naming.block = None; // loaded alone, recorded alone
        }
        if self.keep_linear_layout && naming.block.is_none() {
            naming.transpose = false; // a pack's blocks stay [out, in], as PyTorch's packing modules store them
        }
        naming.path.insert_str(0, &self.prefix);
        if let Some(block) = naming.block.as_mut() {
            block.path.insert_str(0, &self.prefix);
        }
        naming
    }
}

/// How a traversal reads a parameter: its value, or its gradient.
pub(super) trait Read {
    fn read<const D: usize>(&self, param: &Param<Tensor<D>>) -> Option<Tensor<D>>;
}

pub(super) struct Values;

impl Read for Values {
    fn read<const D: usize>(&self, param: &Param<Tensor<D>>) -> Option<Tensor<D>> {
        Some(param.val().detach())
    }
}

#[cfg(feature = "autodiff")]
pub(super) struct Grads<'g>(pub &'g Gradients);

#[cfg(feature = "autodiff")]
impl Read for Grads<'_> {
    fn read<const D: usize>(&self, param: &Param<Tensor<D>>) -> Option<Tensor<D>> {
        // A parameter never initialised took no part in the forward; one that does not require
        // a gradient has none (and burn-optim checks the same before asking).
        if !param.is_initialized() || !param.is_require_grad() {
            return None;
        }
        param.val().grad(self.0)
    }
}

/// Which tensors a traversal records.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Select {
    Parameters,
    Buffers,
}

/// A block read, waiting for the other blocks of its packed tensor.
struct ReadBlock {
    /// The block's entry, recorded alone if the pack cannot be completed.
    alone: Entry,
    tensor: Box<dyn Any + Send>,
    dims: Vec<usize>,
}

/// One block of a pending pack: its place in the traversal, its path alone, and what was read
/// (None: no gradient).
struct Slot {
    place: usize,
    alone: String,
    read: Option<ReadBlock>,
}

struct Pack {
    path: String,
    depth: usize,
    slots: Vec<Option<Slot>>,
}

/// What a traversal found: the entries, the paths read nothing for (no gradient), and whether
/// the model holds a buffer.
pub(super) struct Found {
    pub entries: Vec<Entry>,
    pub unread: Vec<String>,
    pub buffers: bool,
}

/// burn's module traversal, keeping the path and the container types (`Struct:Linear`, `Vec`,
/// …) the way burn-store's collector does, and naming each float tensor.
pub(super) struct Visit<'p, R> {
    names: &'p Names,
    name: &'p dyn Fn(&str) -> String,
    read: R,
    select: Select,
    /// Each tensor is recorded as its L2 norm ([`norms`](Visit::norms)).
    norms: bool,
    path: Vec<String>,
    containers: Vec<String>,
    packs: Vec<Pack>,
    /// The entries, each with its place in the traversal (a packed tensor's: its first block's).
    entries: Vec<(usize, Entry)>,
    /// How many float tensors the traversal has visited.
    visited: usize,
    found: Found,
}

impl<'p, R: Read> Visit<'p, R> {
    /// A traversal naming each tensor's path with `name` (`param/…`).
    pub fn new(names: &'p Names, name: &'p dyn Fn(&str) -> String, read: R, select: Select) -> Self {
        let found = Found { entries: Vec::new(), unread: Vec::new(), buffers: false };
        Visit { names, name, read, select, norms: false, path: Vec::new(), containers: Vec::new(), packs: Vec::new(), entries: Vec::new(), visited: 0, found }
    }

    /// Records each tensor's L2 norm in its place (a packed tensor's: the pack's).
    #[cfg_attr(not(feature = "autodiff"), allow(dead_code))] // `Recorder::grad_norms` needs autodiff
    pub fn norms(mut self) -> Self {
        self.norms = true;
        self
    }

    fn entry<const D: usize>(&self, path: &str, tensor: Tensor<D>) -> Entry {
        match self.norms {
            true => Entry::norm((self.name)(path), tensor),
            false => Entry::new((self.name)(path), tensor),
        }
    }

    /// The entries in traversal order, and the rest of what the traversal found.
    pub fn finish(mut self) -> Found {
        self.flush(0);
        self.entries.sort_by_key(|(place, _)| *place);
        self.found.entries = self.entries.into_iter().map(|(_, entry)| entry).collect();
        self.found
    }

    /// Records the blocks of each pack held by a module deeper than `depth`, which the traversal
    /// has left: a pack that lacks a block (a gate without a bias) is recorded block by block.
    fn flush(&mut self, depth: usize) {
        let (left, kept) = std::mem::take(&mut self.packs).into_iter().partition(|pack| pack.depth > depth);
        self.packs = kept;
        for pack in left {
            self.alone(pack.slots.into_iter().flatten());
        }
    }

    fn alone(&mut self, slots: impl IntoIterator<Item = Slot>) {
        for slot in slots {
            match slot.read {
                Some(read) => self.entries.push((slot.place, read.alone)),
                None => self.found.unread.push(slot.alone),
            }
        }
    }

    /// Adds a block to its pack, and records the packed tensor once it holds every block.
    fn pack<const D: usize>(&mut self, place: usize, naming: Naming, read: Option<ReadBlock>) {
        let block = naming.block.expect("a block");
        let index = match self.packs.iter().position(|pack| pack.path == block.path) {
            Some(index) => index,
            None => {
                let slots = (0..block.blocks).map(|_| None).collect();
                self.packs.push(Pack { path: block.path.clone(), depth: block.depth, slots });
                self.packs.len() - 1
            }
        };
        self.packs[index].slots[block.block] = Some(Slot { place, alone: naming.path, read });
        if self.packs[index].slots.iter().any(Option::is_none) {
            return;
        }
        let pack = self.packs.remove(index);
        let slots: Vec<Slot> = pack.slots.into_iter().flatten().collect();
        let place = slots.iter().map(|slot| slot.place).min().unwrap_or(place);
        let reads: Vec<&ReadBlock> = slots.iter().filter_map(|slot| slot.read.as_ref()).collect();
        if reads.is_empty() {
            self.found.unread.push(pack.path); // no block has a gradient
            return;
        }
        let fits = reads.len() == slots.len() && reads.iter().all(|read| read.dims[1..] == reads[0].dims[1..]);
        if !fits {
            return self.alone(slots);
        }
        let blocks: Vec<Tensor<D>> = slots
            .into_iter()
            .filter_map(|slot| slot.read)
            .map(|read| *read.tensor.downcast::<Tensor<D>>().expect("the blocks of a pack have one rank"))
            .collect();
        let entry = self.entry(&pack.path, Tensor::cat(blocks, 0));
        self.entries.push((place, entry));
    }
}

impl<R: Read> ModuleVisitor for Visit<'_, R> {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.path.push(name.to_string());
        self.containers.push(container_type.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.path.pop();
        self.containers.pop();
        self.flush(self.path.len());
    }

    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let place = self.visited;
        self.visited += 1;
        let naming = self.names.naming(&self.path, &self.containers, D);
        self.found.buffers |= naming.buffer;
        if naming.buffer != (self.select == Select::Buffers) {
            return;
        }
        let Some(tensor) = self.read.read(param) else {
            return match naming.block {
                Some(_) => self.pack::<D>(place, naming, None),
                None => self.found.unread.push(naming.path),
            };
        };
        let tensor = if naming.transpose { tensor.transpose() } else { tensor };
        match naming.block {
            Some(_) => {
                let alone = self.entry(&naming.path, tensor.clone());
                let read = ReadBlock { alone, dims: tensor.dims().to_vec(), tensor: Box::new(tensor) };
                self.pack::<D>(place, naming, Some(read));
            }
            None => {
                let entry = self.entry(&naming.path, tensor);
                self.entries.push((place, entry));
            }
        }
    }
}
