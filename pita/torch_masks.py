"""Dropout keep-masks for `pita.torch.Recorder` (docs/recording.md, "The PyTorch side").

While a Recorder is entered, `torch.nn.functional.dropout` is replaced by `Dropouts.dropout`
(`nn.Dropout` calls it, and so does transformers' eager attention), which records each call's
keep-mask as `mask<k>/<module>[#n]`, or, given a reference's masks, applies them instead of
drawing. `torch.nn.functional.scaled_dot_product_attention` is replaced too, only to warn when
it draws a mask inside its kernel, where nothing can record it.

torch is passed in by pita.torch: importing this module does not import it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import numpy as np

from pita.dump import Dump, read_dump
from pita.errors import UsageError, warn_user
from pita.recording import mask_name, parse

_installed: Dropouts | None = None  # the Dropouts whose functions are in torch.nn.functional now


class Dropouts:
    """Records or replays the keep-masks of the dropout calls of a model's forward passes.

    - `where()`: the path of the innermost module executing, `""` in the model's own forward,
      None outside the model;
    - `step()`: k, the step whose forward runs;
    - `keep(name, mask)`: records a mask (a BOOL tensor, True = kept);
    - `replay`: mask name -> BOOL tensor, the masks to apply instead of drawing; None to draw;
    - `last_step`: calls in later steps are neither recorded nor replayed (warned once): a light recording.
    """

    def __init__(self, torch, *, where: Callable[[], str | None], step: Callable[[], int], keep: Callable, replay: dict | None = None,
                 last_step: int | None = None):
        self._torch = torch
        self._where = where
        self._step = step
        self._keep = keep
        self._replay = replay
        self._last_step = last_step  # masks of later steps are neither recorded nor replayed (a light recording)
        self._calls: dict[tuple[int, str], int] = {}  # (k, module) -> its dropout calls in step k so far
        self._originals: tuple | None = None  # (dropout, scaled_dot_product_attention) as they were
        self._warned: set[str] = set()
        self.replayed = 0  # masks applied from `replay`
        self.unrecorded = 0  # random dropout calls whose mask is not recorded (outside every submodule, or not reproducible)

    # --- patching torch.nn.functional -----------------------------------------------------------

    def install(self) -> None:
        global _installed
        if _installed is not None:
            raise UsageError("another pita.torch.Recorder is recording: enter one at a time "
                             "(each replaces torch.nn.functional.dropout while it records)")
        functional = self._torch.nn.functional
        self._originals = (functional.dropout, functional.scaled_dot_product_attention)
        functional.dropout, functional.scaled_dot_product_attention = self.dropout, self.attention
        _installed = self

    def uninstall(self) -> None:
        global _installed
        if self._originals is not None:
            functional = self._torch.nn.functional
            functional.dropout, functional.scaled_dot_product_attention = self._originals
            self._originals = None
            _installed = None

    # --- the replacements -----------------------------------------------------------------------

    def dropout(self, input, p: float = 0.5, training: bool = True, inplace: bool = False):
        """`torch.nn.functional.dropout`, recording or replaying the mask of a random call."""
        original = self._originals[0]
        if not training or not _draws(p):  # p = 0 or 1 draws nothing; a p outside [0, 1] is the original's to refuse
            return original(input, p, training, inplace)
        module = self._where()
        if not module:
            self._not_recorded("outside", "a dropout called outside every submodule of the model (in its own forward, or beyond it) "
                                          "is neither recorded nor replayed: the convention names a mask by its module; "
                                          "make it an nn.Dropout submodule")
            return original(input, p, training, inplace)
        k = self._step()
        if self._last_step is not None and k > self._last_step:
            self._not_recorded("light", f"a light recording (every=...) records dropout masks of step {self._last_step} only: "
                                        f"step {k}'s are neither recorded nor replayed, so no port can draw them; "
                                        "for a long run, turn dropout off (model.eval(), or p=0)")
            return original(input, p, training, inplace)
        n = self._calls[(k, module)] = self._calls.get((k, module), 0) + 1
        name = mask_name(k, module, n)
        if self._replay is not None:
            return self._replayed(name, input, p, inplace)
        return self._recorded(name, module, input, p, inplace)

    def attention(self, *args, **kwargs):
        """`torch.nn.functional.scaled_dot_product_attention`, warning when it draws a mask."""
        dropout_p = kwargs.get("dropout_p", args[4] if len(args) > 4 else 0.0)
        if _draws(dropout_p):
            where = self._where()
            self._warn_once("attention", f"scaled_dot_product_attention with dropout_p={dropout_p} in {where or 'the model'} "
                                         "draws its mask inside the kernel, where pita cannot record or replay it: use eager "
                                         "attention in the reference (transformers: attn_implementation=\"eager\")")
        return self._originals[1](*args, **kwargs)

    # --- recording and replaying ------------------------------------------------------------------

    def _recorded(self, name: str, module: str, input, p: float, inplace: bool):
        """The real call, then its mask drawn again from the same generator state: PyTorch's
        dropout on the CPU is `input * empty_like(input).bernoulli_(1 - p).div_(1 - p)`. The mask
        is recorded only when it reproduces the real output bit for bit; the generator is left
        where the real call left it."""
        torch = self._torch
        source = input.detach().clone() if inplace else input.detach()
        before = _rng_states(torch, input)
        output = self._originals[0](input, p, True, inplace)
        after = _rng_states(torch, input)
        with torch.no_grad():
            _set_rng_states(torch, input, before)
            noise = torch.empty_like(source).bernoulli_(1 - p)
            _set_rng_states(torch, input, after)
            mask = noise.bool()
            reproduced = _same(torch, source * noise.div_(1 - p), output.detach())
        if reproduced:
            self._keep(name, mask)
        else:
            self._not_recorded("unreproduced", f"{name}: the dropout in {module} does not compute input * mask / (1 - p) from "
                                               "the mask its generator draws (another dropout implementation, such as CUDA's "
                                               "fused kernel): its mask, and any other such, is neither recorded nor replayed")
        return output

    def _replayed(self, name: str, input, p: float, inplace: bool):
        """`input * (mask / (1 - p))`, the division in the input's dtype first: PyTorch's own
        arithmetic, with the reference's mask instead of a drawn one."""
        mask = self._replay.get(name)
        if mask is None:
            raise UsageError(f"{name}: the masks replayed (masks_from) hold no such mask: this run calls dropout where the "
                             "reference did not (another model, more steps, or a module called more often)")
        if tuple(mask.shape) != tuple(input.shape):
            raise UsageError(f"{name}: the mask replayed has shape {list(mask.shape)}, the dropout's input {list(input.shape)}")
        scale = mask.to(device=input.device, dtype=input.dtype) / (1 - p)
        self._keep(name, mask)
        self.replayed += 1
        return input.mul_(scale) if inplace else input * scale

    def _not_recorded(self, key: str, message: str) -> None:
        self.unrecorded += 1
        self._warn_once(key, message)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warn_user(message)


def masks_to_replay(torch, masks_from) -> dict | None:
    """name -> BOOL tensor on the host: the `mask<k>/` tensors of `masks_from` (a Dump, a path or a mapping)."""
    if masks_from is None:
        return None
    if isinstance(masks_from, (str, os.PathLike)):
        masks_from = read_dump(masks_from)
    tensors = masks_from.tensors if isinstance(masks_from, Dump) else masks_from
    if not isinstance(tensors, Mapping):
        raise UsageError(f"masks_from must be a recording (a pita.dump.Dump or its path) or a mapping of names to tensors, "
                         f"got {type(masks_from).__name__}")
    masks = {}
    for name, tensor in tensors.items():
        if (parsed := parse(name)) is None or parsed.kind != "mask":
            continue
        tensor = tensor.detach().cpu() if isinstance(tensor, torch.Tensor) else torch.from_numpy(np.array(tensor))
        if tensor.dtype != torch.bool:
            raise UsageError(f"masks_from: {name} is {str(tensor.dtype).removeprefix('torch.')}; a keep-mask is BOOL (True = kept)")
        masks[name] = tensor
    if not masks:
        raise UsageError("masks_from holds no mask<k>/ tensor: nothing to replay (did the reference run train with dropout p > 0?)")
    return masks


def _draws(p) -> bool:
    """Whether a dropout of probability `p` draws random numbers (0 < p < 1)."""
    try:
        return 0 < float(p) < 1
    except (TypeError, ValueError):
        return False


def _same(torch, expected, output) -> bool:
    """Equal element for element, NaN where the other is NaN (a NaN input stays NaN either way)."""
    return torch.equal(expected, output) or (expected.shape == output.shape and bool(((expected == output) | (expected.isnan() & output.isnan())).all()))


def _rng_states(torch, tensor) -> tuple:
    """The CPU generator's state, and the CUDA one of the tensor's device when it is on CUDA."""
    return torch.get_rng_state(), torch.cuda.get_rng_state(tensor.device) if tensor.is_cuda else None


def _set_rng_states(torch, tensor, states: tuple) -> None:
    cpu, cuda = states
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state(cuda, tensor.device)
