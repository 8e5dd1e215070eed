//! ce10e: a bare boolean mask handed to `sdpa` is rejected: the port must say what `true` means.
use burn::tensor::{Bool, Device, Tensor};
use pita::attend_mask::sdpa;

fn main() {
    let device = Device::flex();
    let query = Tensor::<4>::zeros([1, 1, 1, 2], &device);
    let key = Tensor::<4>::zeros([1, 1, 3, 2], &device);
    let value = Tensor::<4>::zeros([1, 1, 3, 2], &device);
    let mask = Tensor::<4, Bool>::empty([1, 1, 1, 3], &device); // PyTorch's SDPA mask, True = attend

    let _out = sdpa(query, key, value, mask); // expected `AttendMask`
}
