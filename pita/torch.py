"""Recording a PyTorch training run for `pita trace` (the convention: docs/recording.md).

`record(model, inputs, targets, loss_fn, path, optimizer, steps=2)` runs a short training run and
writes one recording, and by default the same run in float64 beside it; `Recorder(model)` records
a custom loop. Both name tensors by PyTorch's own traversal (`named_parameters()`,
`named_modules()`, `named_buffers()`), never by a hand-written list, and write through
`pita.torch_dump.write_torch_dump`, so the provenance keys are a dump's usual ones. Dropout masks
are recorded and replayed by `pita.torch_masks`.

torch is imported only when a function here is called or a `Recorder` is created: `import
pita.torch` works without it, and a call says that it needs torch.
"""

from __future__ import annotations

import copy
import gc
import inspect
import itertools
import json
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from pita.errors import UsageError
from pita.recording import (
    RECORDING,
    act_name,
    check_metadata,
    check_step,
    grad_name,
    gradnorm_name,
    loss_name,
    optim_name,
    param_name,
    parse,
    step_name,
)
from pita.sharded_writer import DEFAULT_SHARD_BYTES, check_shard_bytes, index_path, remove_recording

ACTIVATIONS = ("first", "none")
# float64="auto" runs the float64 copy when its estimated need is under this share of the memory
# available when it starts: the estimate is rough (it ignores the forward's temporaries).
FLOAT64_MEMORY_SHARE = 0.5
# The estimate: per parameter, a float64 value, its gradient and two optimizer-state tensors
# (Adam's exp_avg and exp_avg_sq); per recorded activation element 8 bytes for what autograd keeps
# of the forward; and per recorded element 8 bytes for the recording's own copy where it is held
# until the end (a `.json` or `.npz` recording; a `.safetensors` one is streamed, one shard held).
FLOAT64_BYTES_PER_PARAMETER = 4 * 8
FLOAT64_BYTES_PER_RECORDED_ELEMENT = 8

__all__ = ["RECORDING", "Recorder", "loss_settings", "module_settings", "record"]


def _torch():
    try:
        import torch
    except ImportError as error:
        raise ImportError("pita.torch records a PyTorch run and needs torch, which is not installed here "
                          f"(pip install torch); the rest of pita works without it ({error})") from None
    return torch


def record(model, inputs, targets, loss_fn: Callable, path: str | Path, optimizer=None, steps: int = 1, *, dtype=None,
           float64: bool | str = "auto", optimizer_state: bool = False, depth: int | None = None, include=None, exclude=None,
           every: int | None = None, shard_bytes: int = DEFAULT_SHARD_BYTES, **metadata) -> Path:
    """Runs `steps` training steps of `model` and writes their recording to `path` (`.safetensors`,
    with its JSON form beside it when small enough; `.json` or `.npz` also work), then, by
    default, the same run in float64 to `<stem>-float64<suffix>` beside it. Returns the path
    written: `path`, or for a `.safetensors` recording larger than `shard_bytes` its index.

    Each step is `loss = loss_fn(model(*inputs), targets)`, `loss.backward()`, then
    `optimizer.step()`. Recorded: `param/*` before step 1, `act/*` of the first forward pass,
    `mask<k>/*` (the keep-mask of every dropout call of step k's forward), `loss/<k>` of every
    step, `grad/*` of step 1, `step<k>/*` (parameters and floating buffers) after every optimizer
    step, and with `optimizer_state=True` the optimizer's per-parameter state
    `optim<k>/<path>/<state>`; the optimizer's settings in the metadata key `optimizer`, every
    module's in `modules` and the loss's in `loss_fn` when it is an `nn.Module` (docs/settings.md).

    - `inputs`: a tensor, or a tuple (or list) of the model's positional arguments.
    - `targets`: passed to `loss_fn` as given (a tensor, a tuple, anything).
    - `optimizer=None`: forward, loss and backward of one step only (`steps` must be 1); no
      `step<k>/` tensors. Else a `torch.optim.Optimizer` over the model's parameters, or a factory
      `lambda params: torch.optim.Adam(params, lr=1e-3)` called with `model.parameters()`, which
      must return an optimizer over those parameters (all or some).
    - Gradients are set to None before each step (`model.zero_grad(set_to_none=True)`), so
      gradients left from before the call do not leak into `grad/*`; where a float64 run
      follows, they are set to None after the run too, before the float64 run allocates.
    - The model runs in the mode it is in (`train()` or `eval()`). Dropout's masks are recorded
      (they cannot be aligned by seeding: frameworks draw from different generators); the port
      replays them (docs/recording.md). `optimizer.step()` is called without a closure (for
      LBFGS, write the loop with `Recorder`).
    - `dtype=None`: the run happens on `model` itself, whose parameters the optimizer steps (the
      model is trained `steps` steps by the call). `dtype=torch.float64` (or another floating
      dtype): the run happens on a deep copy of the model cast to `dtype`, with floating tensors in
      `inputs` and `targets` cast too (integer ones, such as token ids, stay as they are); `model`
      and `optimizer` are left untouched. The copy's optimizer is the factory called on the copy's
      parameters, or, for an optimizer instance, `type(optimizer)(<the copy's parameters, grouped as
      in optimizer.param_groups>, **optimizer.defaults)` given `optimizer.state_dict()` (so every
      group's hyper-parameters and any state it already holds carry over, cast to `dtype`). An
      optimizer whose constructor does not take its own `defaults` needs a factory.
    - `float64`: `"auto"` (the default), True or False: whether the float64 run follows. It runs
      on a copy of `model` taken before the run trains it, cast as `dtype=torch.float64` casts,
      with the optimizer rebuilt as that path rebuilds it (from its state before the run; one it
      cannot rebuild is refused before the run), and replays the run's dropout masks. It
      starts after the recording is written (whose metadata key `reference64` names its file)
      and the run's tensors are freed. `"auto"` skips it, saying why on stderr, where the
      estimated need (`FLOAT64_BYTES_PER_PARAMETER`, `FLOAT64_BYTES_PER_RECORDED_ELEMENT`) is
      not under `FLOAT64_MEMORY_SHARE` of the memory available, or where a dropout's mask could
      not be recorded; it is not run when the run is float64 already. True with
      `dtype=torch.float64` is refused.
    - `depth`, `include`, `exclude`: which modules' outputs are recorded (`Recorder`'s).
    - `shard_bytes` (default 256 MiB): a `.safetensors` recording is written while the run
      goes, each tensor held on the host only until the tensors held would pass `shard_bytes`,
      then written as a shard and freed (`pita.sharded_writer`): a recording larger than that is
      `<stem>-00001.safetensors`, … and the index `<stem>.safetensors.index.json` (the path
      returned; `read_dump(path)` finds it). `.json` and `.npz` recordings are held until the end.
    - `every=k`: a light recording of a long run (docs/recording.md, "Long runs"): step 1 in
      full, then for every step j `loss/<j>` and `gradnorm<j>/<path>` (the L2 norm of each
      gradient), and `step<j>/` only for j a multiple of k and for j = `steps`; the metadata
      key `every` holds k. Needs an optimizer.
    - `metadata`: extra metadata, written as strings (`experiment`, `input_sha256`, `batch_size`,
      which lets compare explain a factor equal to the batch size, …), in both recordings.

    A run that raises leaves no file and no hooks behind; a float64 run that raises leaves the
    recording written before it. `path`, its float64 sibling's path, `metadata` and the module
    selection are checked before the first step: a path the writer would refuse (a folder, a FIFO
    or device, a suffix it does not write, a folder that cannot be written to) costs no run.
    """
    torch = _torch()
    from pita.torch_dump import check_torch_dump_path

    check_metadata(metadata)  # before the run, which trains `model`
    path = check_torch_dump_path(path)  # likewise: the writer's own checks, so a bad path costs no run
    _check_run(steps, optimizer, optimizer_state, every)
    shard_bytes = check_shard_bytes(shard_bytes)
    dtype = None if dtype is None else _floating_dtype(torch, dtype)
    sibling = _float64_path(torch, path, float64, dtype, model)
    if sibling is not None:
        check_torch_dump_path(sibling)
    selection = {"depth": depth, "include": include, "exclude": exclude}
    _selected_modules(torch, model, **selection)
    run = _Run(loss_fn, steps, optimizer_state, selection, every, shard_bytes)
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    twin = _Twin(torch, model, optimizer) if sibling is not None else None  # before the run trains `model`
    written, masks, sibling = _record_run(torch, run, path, metadata, float64, sibling,
                                          *_prepared(torch, dtype, model, optimizer, inputs, targets))
    if sibling is not None:
        _record_float64(torch, run, twin.prepared(torch, model, optimizer, inputs, targets), masks, written, sibling, metadata)
    return written


def _check_run(steps, optimizer, optimizer_state, every) -> None:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise UsageError(f"steps must be a positive integer, got {steps!r}")
    if optimizer is None and steps != 1:
        raise UsageError(f"steps={steps} needs an optimizer: without one, record runs forward, loss and backward of one step only")
    if optimizer_state and optimizer is None:
        raise UsageError("optimizer_state=True needs an optimizer")
    _check_every(every)
    if every is not None and optimizer is None:
        raise UsageError(f"every={every} needs an optimizer: a light recording follows a run of many optimizer steps")


def _check_every(every) -> None:
    if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < 1):
        raise UsageError(f"every must be a positive integer (parameters are recorded after every k-th step), got {every!r}")


@dataclass(frozen=True)
class _Run:
    """The training run `record` records, for the run itself and for its float64 sibling."""

    loss_fn: Callable
    steps: int
    optimizer_state: bool
    selection: dict
    every: int | None
    shard_bytes: int

    def __call__(self, model, optimizer, inputs, targets, path: Path, masks: dict | None = None, sharded: bool | None = None) -> Recorder:
        """Runs and records; the recording is streamed to `path` (a `.safetensors` one), not yet closed."""
        from pita.progress import Progress

        stream = {"stream_to": path, "shard_bytes": self.shard_bytes, "sharded": sharded} if path.suffix == ".safetensors" else {}
        recorder = Recorder(model, optimizer_state=self.optimizer_state, masks_from=masks, loss_fn=self.loss_fn, every=self.every,
                            **stream, **self.selection)
        try:
            with recorder, Progress(self.steps, "record") as progress:
                recorder.params()
                for k in range(1, self.steps + 1):
                    progress.advance(f"step {k}")
                    self._step(recorder, k, model, optimizer, inputs, targets)
        except BaseException:
            recorder.abort()
            raise
        return recorder

    def _step(self, recorder: Recorder, k: int, model, optimizer, inputs, targets) -> None:
        model.zero_grad(set_to_none=True)
        loss = self.loss_fn(model(*inputs), targets)
        recorder.loss(k, loss)
        loss.backward()
        if k == 1:
            recorder.grads()
        if self.every is not None:
            recorder.grad_norms(k)
        if optimizer is None:
            return
        optimizer.step()
        if self.every is None or k == 1 or k % self.every == 0 or k == self.steps:
            recorder.step(k, optimizer, state=self.every is None or k == 1)
        else:
            recorder.stepped(k)


def _prepared(torch, dtype, model, optimizer, inputs, targets, *, copied=None, optimizer_state=None) -> tuple:
    """(model, optimizer, inputs, targets) of the run in `dtype`: `model` itself for None, else a
    copy cast to `dtype` (`copied`, a copy taken earlier, or a fresh one) with its optimizer rebuilt
    (from `optimizer_state`, the state taken with `copied`) and the floating inputs and targets cast."""
    if dtype is None:
        built = optimizer if optimizer is None or isinstance(optimizer, torch.optim.Optimizer) else _built(torch, optimizer, model)
        return model, built, inputs, targets
    copied = (copied if copied is not None else copy.deepcopy(model)).to(dtype)
    rebuilt = _optimizer_for_copy(torch, optimizer, model, copied, optimizer_state)
    return copied, rebuilt, _cast(torch, inputs, dtype), _cast(torch, targets, dtype)


class _Twin:
    """The model and the optimizer's state as they were before the run: what the float64 run starts from."""

    def __init__(self, torch, model, optimizer):
        self.model = copy.deepcopy(model)
        self.optimizer_state = copy.deepcopy(optimizer.state_dict()) if isinstance(optimizer, torch.optim.Optimizer) else None
        _optimizer_for_copy(torch, optimizer, model, self.model, self.optimizer_state)  # refused now, not after the run

    def prepared(self, torch, model, optimizer, inputs, targets) -> tuple:
        copied, self.model = self.model, None  # the float64 run holds the only reference
        return _prepared(torch, torch.float64, model, optimizer, inputs, targets, copied=copied, optimizer_state=self.optimizer_state)


def _record_run(torch, run: _Run, path: Path, metadata: dict, float64, sibling: Path | None, *prepared) -> tuple[Path, dict, tuple | None]:
    """Runs and writes the recording; returns the path written, its masks, and where the float64
    run goes: (its path, whether it is sharded), None where none follows. The float64 run's form
    is decided now, from the run's bytes in float64, so that `reference64` names its file as it
    will be written. Everything else the run held is freed on return, and so are the gradients
    the run left on the model when a float64 run follows."""
    recorder = run(*prepared, path=path)
    try:
        if sibling is not None and float64 == "auto" and (reason := _no_float64_reason(torch, recorder, prepared[0])):
            print(f"pita.torch.record: no float64 run beside {path.name}: {reason} (float64=True runs it anyway)", file=sys.stderr)
            sibling = None
        unreplayable = sibling is not None and recorder.dropouts.unrecorded  # float64=True: its masks cannot be the run's
        sharded = sibling is not None and sibling.suffix == ".safetensors" and recorder.bytes64 > run.shard_bytes
        reference64 = None if sibling is None or unreplayable else index_path(sibling) if sharded else sibling
        written = recorder._write(path, metadata, reference64=reference64)
    except BaseException:
        recorder.abort()
        raise
    if unreplayable:
        raise UsageError(f"{written} is written, without its float64 run: {_unrecorded(recorder)}, so a float64 run could not draw the same masks")
    if sibling is not None:
        prepared[0].zero_grad(set_to_none=True)  # the float64 run must not sit beside this run's gradients
    return written, recorder.masks(), None if sibling is None else (sibling, sharded)


def _record_float64(torch, run: _Run, prepared: tuple, masks: dict, written: Path, plan: tuple, metadata: dict) -> None:
    """The float64 run, written to `plan`'s path (sharded or not, as `reference64` says). An
    earlier recording there is removed first: the recording just written names it, and must not
    be paired with another run's."""
    sibling, sharded = plan
    gc.collect()  # the run's Recorder and its dropout capture refer to each other: free its tensors before this run allocates
    remove_recording(sibling)
    try:
        run(*prepared, path=sibling, masks=masks or None, sharded=sharded)._write(sibling, metadata)
    except BaseException as error:
        error.add_note(f"pita.torch.record: {written} is written; its float64 run, which its reference64 names, failed "
                       f"and {sibling.name} is not written (record with float64=False to skip it)")
        raise


def _float64_path(torch, path: Path, float64, dtype, model) -> Path | None:
    """Where the float64 run goes, or None where none is asked for or the run is float64 already."""
    if not (float64 is True or float64 is False or float64 == "auto"):
        raise UsageError(f"float64 must be True, False or 'auto', got {float64!r}")
    if float64 is True and dtype == torch.float64:
        raise UsageError("float64=True with dtype=torch.float64: the run is float64 already (drop one of them)")
    if float64 is False or dtype == torch.float64 or (dtype is None and _dtype_name(model) == "float64"):
        return None
    return path.with_name(f"{path.stem}-float64{path.suffix}")


def _no_float64_reason(torch, recorder: Recorder, model) -> str | None:
    """Why "auto" would not run the float64 copy, or None: a mask it could not replay, or the memory rule."""
    if recorder.dropouts.unrecorded:
        return _unrecorded(recorder)
    parameters = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    held = recorder.activation_elements + (0 if recorder.streamed else recorder.recorded_elements)
    need = FLOAT64_BYTES_PER_PARAMETER * parameters + FLOAT64_BYTES_PER_RECORDED_ELEMENT * held
    available = _available_memory(torch, _device(torch, model))
    if available is not None and need >= FLOAT64_MEMORY_SHARE * available:
        return f"it needs about {need / 2**30:.2f} GiB, not under {FLOAT64_MEMORY_SHARE:g} of the {available / 2**30:.2f} GiB available"
    return None


def _unrecorded(recorder: Recorder) -> str:
    return f"the mask of {recorder.dropouts.unrecorded} dropout call(s) was not recorded (warned above)"


def _available_memory(torch, device) -> int | None:
    """Bytes available to a new allocation on `device`: MemAvailable of /proc/meminfo for the CPU,
    the driver's free memory for CUDA; None where it cannot be known."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type != "cpu":
        return None
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class Recorder:
    """Records a custom training loop, name for name as docs/recording.md says.

    ```python
    with pita.torch.Recorder(model) as recorder:
        recorder.params()
        for k in (1, 2):
            loss = loss_fn(model(inputs), targets)     # act/* recorded in the first forward only
            recorder.loss(k, loss)                     # masks drawn after this belong to step k + 1
            loss.backward()
            if k == 1:
                recorder.grads()
            optimizer.step(); optimizer.zero_grad()
            recorder.step(k, optimizer)
    recorder.write("torch-record.safetensors", experiment="myport")
    ```

    Entering the context puts a forward pre-hook and a forward hook on every module, and replaces
    `torch.nn.functional.dropout` (and `scaled_dot_product_attention`, to warn) until it is left.
    `model`'s own output is not recorded (it is its last module's; its hook only ends the pass).
    A selected module's hook records its output as `act/<module path>` when its call ends, so a
    child comes before its parent; the n-th call (n ≥ 2) of a module called more than once is
    `act/<module path>#<n>`. Only the first forward pass is recorded: hooks record from
    entering until the first call of `model` ends, or until `loss`, `grads` or `step` is first
    called (which ends the pass of a loop that calls submodules directly). An output that is not
    a tensor is recorded by the first tensor in it, depth-first and in order through tuples,
    lists and mappings' values (`a` of `((a, b), c)`); an output holding no tensor (None) is
    skipped. Leaving the context removes the hooks and puts torch's functions back, also on an
    exception. One Recorder records at a time.

    Every dropout call with `training=True` and 0 < p < 1, in every step's forward, records its
    keep-mask (BOOL, True = kept) as `mask<k>/<module>[#n]`: k is the step whose forward runs
    (1 until `loss(1)` or `step(1)` is called, then 2, …), `<module>` the innermost module
    executing, `#n` its n-th dropout call in step k. The mask is drawn again from the generator
    state the call started from and kept only when `input * mask / (1 - p)` is the call's output
    bit for bit (PyTorch's CPU dropout); a call it does not reproduce, or one outside every
    submodule, is not recorded, with a warning. With `masks_from`, each such call applies the
    recorded mask instead of drawing (`input * (mask / (1 - p))` in the input's dtype), records
    it too, and the metadata key `masks_replayed` counts them; a call whose mask is missing or
    has another shape raises `UsageError`.

    Names are PyTorch's: `model.named_parameters()` for parameters, `model.named_modules()` for
    modules, `model.named_buffers()` for buffers. A shared (tied) parameter is named once, by the
    first name `named_parameters()` gives it; a module instance registered under two paths
    likewise has one name, and its calls through either path are numbered together.

    Every tensor is detached and copied to host memory when recorded, so later in-place updates
    (an optimizer step, `ReLU(inplace=True)`) do not change what was recorded, and recorded
    activations hold no device memory. The `backend` metadata still names the devices the
    tensors came from. A sparse tensor (the gradient of `nn.Embedding(sparse=True)`) is recorded
    dense, its name listed in the `densified` metadata key; a nested tensor is refused, named.

    - `activations`: `"first"` (the first forward pass, as above) or `"none"` (no activation).
    - `optimizer_state`: `step(k, optimizer)` also records the optimizer's per-parameter state.
    - `depth`, `include`, `exclude`: the modules whose outputs are recorded: those at most
      `depth` deep (a child of `model` is 1 deep, `h.0.attn` 3), matching one of the `include`
      patterns, and none of the `exclude` patterns (fnmatch on the module path, where `*`
      crosses dots: `h.*.attn`); every pattern must match some module.
    - `masks_from`: the masks to replay: a recording (a `pita.dump.Dump` or its path) or a
      mapping of names to BOOL tensors; its `mask<k>/` names are used, the rest is ignored.
    - `loss_fn`: the loss, whose settings (`reduction`, `ignore_index`, `label_smoothing`,
      `weight`, …) are written as the `loss_fn` metadata when it is a `torch.nn.Module`.
    - `every`: written as the `every` metadata (a light recording: docs/recording.md); dropout
      masks are recorded in step 1 only.
    - `stream_to` (a `.safetensors` path): each tensor goes to a `pita.sharded_writer.ShardedWriter`
      as it is recorded, held only until the tensors held would pass `shard_bytes`, then written
      as a shard; `finish(**metadata)` closes the recording (the one file, or shards and index;
      `sharded=True` always the index form) and returns the path written; leaving the context on
      an exception, or `abort()`, removes what was written. Without it, tensors are held in
      `tensors` until `write(path)`.

    Every module's settings are written as the `modules` metadata (`module_settings`), and
    trace compares them before any tensor (docs/settings.md).
    """

    def __init__(self, model, *, activations: str = "first", optimizer_state: bool = False, depth: int | None = None, include=None,
                 exclude=None, masks_from=None, loss_fn=None, every: int | None = None, stream_to: str | Path | None = None,
                 shard_bytes: int = DEFAULT_SHARD_BYTES, sharded: bool | None = None):
        torch = _torch()
        from pita.torch_dump import streamed_writer
        from pita.torch_masks import Dropouts, masks_to_replay

        if not isinstance(model, torch.nn.Module):
            raise UsageError(f"Recorder records a torch.nn.Module, got {type(model).__name__}")
        if activations not in ACTIVATIONS:
            raise UsageError(f"activations must be one of {', '.join(map(repr, ACTIVATIONS))}, got {activations!r}")
        if activations == "none" and (depth, include, exclude) != (None, None, None):
            raise UsageError("depth, include and exclude choose the modules whose outputs are recorded; activations='none' records none")
        self.model = model
        self.loss_fn = loss_fn  # its settings are written (metadata `loss_fn`) when it is a module
        self.activations = activations
        self.optimizer_state = optimizer_state
        self.tensors: dict = {}  # name -> the recorded tensor (detached, on the host); empty when streamed
        self._masks: dict = {}  # the mask<k>/ tensors, kept for `masks()` also when streamed
        self._names: set[str] = set()
        self.recorded_elements = 0
        self.activation_elements = 0
        self.bytes64 = 0  # the recording's bytes were its floating tensors float64: the float64 run's size
        self.every = every
        _check_every(every)
        self._writer = None if stream_to is None else streamed_writer(Path(stream_to), check_shard_bytes(shard_bytes), sharded, RECORDING)
        self.execution_order: list[str] = []  # the act/ names, in the order their calls ended
        self.no_grad: list[str] = []  # parameters grads() found without a gradient
        self.densified: list[str] = []  # names recorded from a sparse tensor, as dense
        self.buffers: list[str] = []  # the buffer paths step() records
        self.steps: set[int] = set()
        self.dropouts = Dropouts(torch, where=self._innermost, step=lambda: self._forward_step, keep=self._keep,
                                 replay=masks_to_replay(torch, masks_from), last_step=None if every is None else 1)
        self._selected = _selected_modules(torch, model, depth, include, exclude)
        self._optimizer: str | None = None  # the optimizer's settings, as the `optimizer` metadata key holds them
        self._forward_step = 1  # k of the step whose forward runs now
        self._modules: list[str] = []  # the paths of the modules executing, outermost first ("" for model)
        self._devices: set[str] = set()
        self._calls: dict[str, int] = {}
        self._handles: list = []
        self._listening = False
        self._pass_over = False  # the first forward pass has ended: no activation is recorded any more
        self._dtype = _dtype_name(model)

    # --- the context: hooks -------------------------------------------------------------------

    def __enter__(self) -> Recorder:
        if self._handles:
            raise UsageError("this Recorder is already recording: enter it once")
        try:
            for name, module in self.model.named_modules():
                self._handles.append(module.register_forward_pre_hook(self._entering(name)))
                self._handles.append(module.register_forward_hook(self._leaving(name), always_call=True))  # also when forward raises
            self.dropouts.install()
        except BaseException:
            self._remove_hooks()
            raise
        self._listening = self.activations == "first" and not self._pass_over
        return self

    def __exit__(self, exc_type, *exc_info) -> None:
        self._remove_hooks()
        if exc_type is not None:
            self.abort()

    @property
    def streamed(self) -> bool:
        """Whether tensors go to disk as they are recorded (`stream_to`) instead of being held until `write`."""
        return self._writer is not None

    def abort(self) -> None:
        """Removes what a streamed recording has written so far; nothing of it is left."""
        if self._writer is not None:
            self._writer.abort()

    def _remove_hooks(self) -> None:
        self._listening = False
        self.dropouts.uninstall()
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._modules.clear()

    def _entering(self, name: str):
        def hook(module, args):
            if not name:  # model's own call: nothing a forward interrupted (KeyboardInterrupt) left is still executing
                self._modules.clear()
            self._modules.append(name)

        return hook

    def _leaving(self, name: str):
        selected = name in self._selected

        def hook(module, args, output):  # output is None when the call raised
            while self._modules and self._modules.pop() != name:
                pass
            if not name:
                self._end_forward()
            elif selected and self._listening:
                self._record_output(name, output)

        return hook

    def _innermost(self) -> str | None:
        """The path of the innermost module executing ("" for model's own forward), None outside the model."""
        return self._modules[-1] if self._modules else None

    def _record_output(self, name: str, output) -> None:
        tensor = _first_tensor(_torch(), output)
        if tensor is None:
            return
        n = self._calls.get(name, 0) + 1
        self._calls[name] = n
        key = act_name(name, n)
        self._keep(key, tensor)
        self.activation_elements += tensor.numel()
        self.execution_order.append(key)

    # --- what is recorded ---------------------------------------------------------------------

    def params(self) -> None:
        """`param/<path>`: every parameter as it is now (call it before the first step)."""
        for name, parameter in self.model.named_parameters():
            self._keep(param_name(name), parameter)

    def loss(self, k: int, loss) -> None:
        """`loss/<k>`: the loss of step k (k = 1, 2, …), one element, stored with shape `[1]`.
        Dropout masks drawn after it belong to step k + 1."""
        torch = _torch()
        self._end_forward()
        name = loss_name(k)
        loss = loss if isinstance(loss, torch.Tensor) else torch.tensor(loss)
        if loss.numel() != 1:
            raise UsageError(f"loss {k} has shape {list(loss.shape)}: record the reduced loss (one element)")
        self._keep(name, loss.reshape(1))
        self._forward_step = max(self._forward_step, k + 1)

    def grads(self) -> None:
        """`grad/<path>`: every parameter's gradient (call it after step 1's `backward()`).
        Parameters without one (frozen, or unused by the loss) are skipped and listed in the
        `no_grad` metadata key."""
        self._end_forward()
        for name, parameter in self.model.named_parameters():
            if parameter.grad is None:
                self.no_grad.append(name)
            else:
                self._keep(grad_name(name), parameter.grad)

    def grad_norms(self, k: int) -> None:
        """`gradnorm<k>/<path>`: the L2 norm of every parameter's gradient in step k
        (`torch.linalg.vector_norm`, 0-d, in the gradient's dtype); parameters without one are skipped."""
        torch = _torch()
        self._end_forward()
        for name, parameter in self.model.named_parameters():
            if parameter.grad is not None:
                gradient = parameter.grad.to_dense() if parameter.grad.layout != torch.strided else parameter.grad
                self._keep(gradnorm_name(k, name), torch.linalg.vector_norm(gradient))

    def stepped(self, k: int) -> None:
        """Optimizer step k happened and nothing of it is recorded after it (a light recording's
        step between checkpoints): counted in `steps`; dropout masks drawn next belong to step k + 1."""
        self._end_forward()
        check_step(k)
        self.steps.add(k)
        self._forward_step = max(self._forward_step, k + 1)

    def step(self, k: int, optimizer=None, *, state: bool = True) -> None:
        """`step<k>/<path>`: every parameter, and every persistent floating buffer (BatchNorm's
        `running_mean`, `running_var`; listed in the `buffers` metadata key), after optimizer
        step k. The first call given an optimizer stores its settings in the `optimizer` metadata
        key. With `optimizer_state=True` also `optim<k>/<path>/<state>`: each tensor of the
        parameter's shape that the optimizer keeps for it, by its key in `optimizer.state`
        (`exp_avg`, `exp_avg_sq` for Adam, `momentum_buffer` for SGD with momentum). Counters
        such as Adam's `step` (0-d) are not recorded: burn keeps them as plain integers, so they
        would be one-sided names. `state=False` leaves the optimizer's state out this step (a light
        recording's later checkpoints). Dropout masks drawn after it belong to step k + 1."""
        torch = _torch()
        self._end_forward()
        check_step(k)
        if self.optimizer_state and state and optimizer is None:
            raise UsageError(f"step({k}): this Recorder records the optimizer's state; pass the optimizer")
        for name, parameter in self.model.named_parameters():
            self._keep(step_name(k, name), parameter)
        buffers = _floating_buffers(self.model)
        for name, buffer in buffers:
            self._keep(step_name(k, name), buffer)
        self.buffers = [name for name, _ in buffers]
        if self.optimizer_state and state:
            for name, parameter in self.model.named_parameters():
                for key, value in optimizer.state.get(parameter, {}).items():
                    if isinstance(value, torch.Tensor) and value.shape == parameter.shape:
                        self._keep(optim_name(k, name, key), value)
        if optimizer is not None and self._optimizer is None:
            self._optimizer = _optimizer_settings(torch, optimizer)
        self.steps.add(k)
        self._forward_step = max(self._forward_step, k + 1)

    def masks(self) -> dict:
        """The keep-masks recorded (or replayed) so far, by name: what `masks_from` takes."""
        return dict(self._masks)

    def finish(self, **metadata) -> Path:
        """Closes a streamed recording (`stream_to`): writes what is held and the index (or the
        one file) with the metadata `write` writes; returns the path written."""
        if self._writer is None:
            raise UsageError("finish() closes a recording streamed to a path (Recorder(..., stream_to=path)); call write(path)")
        return self._write(self._writer.path, metadata)

    def write(self, path: str | Path, **metadata) -> Path:
        """Writes the recording with `pita.torch_dump.write_torch_dump` (atomically; the JSON form
        beside a `.safetensors` file when small enough) and returns the path. Metadata: the
        provenance, `recording`, `execution_order`, `steps`, `dtype`, `modules`, `loss_fn` when the
        loss is a module, `no_grad` when a parameter
        had no gradient, `densified` when a sparse tensor was recorded, `buffers` when a buffer
        was, `optimizer` when `step` was given one, `masks_replayed` when a mask was replayed, and
        `metadata` (strings; the recorder's own keys and the provenance keys,
        `pita.recording.RECORDER_KEYS` and `PROVENANCE_KEYS`, are refused)."""
        if self._writer is not None:
            raise UsageError(f"this Recorder streams to {self._writer.path}: close it with finish()")
        return self._write(path, metadata)

    def _write(self, path: str | Path, metadata: dict, *, reference64: Path | None = None) -> Path:
        from pita.torch_dump import write_torch_dump

        check_metadata(metadata)
        own = {"recording": RECORDING, "execution_order": json.dumps(self.execution_order), "steps": str(len(self.steps)),
               "dtype": self._dtype}
        listed = {"no_grad": self.no_grad, "densified": self.densified, "buffers": self.buffers}
        own.update({key: json.dumps(names) for key, names in listed.items() if names})
        own["modules"] = json.dumps(module_settings(self.model))
        if (loss := loss_settings(self.loss_fn)) is not None:
            own["loss_fn"] = json.dumps(loss)
        if self._optimizer is not None:
            own["optimizer"] = self._optimizer
        if reference64 is not None:
            own["reference64"] = reference64.name
        if self.dropouts.replayed:
            own["masks_replayed"] = str(self.dropouts.replayed)
        if self.every is not None:
            own["every"] = str(self.every)
        if self._devices:
            own["backend"] = ", ".join(sorted(self._devices))
        if self._writer is not None:
            return self._writer.close({**self._writer.shard_metadata, "backend": "cpu", **own, **metadata})
        return write_torch_dump(path, self.tensors, **{**own, **metadata})

    def _end_forward(self) -> None:
        self._listening = False
        self._pass_over = True

    def _keep(self, name: str, tensor) -> None:
        if name in self._names:
            raise UsageError(f"{name} is already recorded")
        if tensor.is_nested:
            raise UsageError(f"{name}: a nested tensor, which a recording cannot hold (a dump holds dense tensors)")
        self._devices.add(str(tensor.device))
        tensor = tensor.detach()
        if tensor.layout != _torch().strided:  # a sparse gradient (nn.Embedding(sparse=True)), a sparse activation
            tensor = tensor.to_dense()
            self.densified.append(name)
        self._names.add(name)
        self.recorded_elements += tensor.numel()
        self.bytes64 += tensor.numel() * 8 if tensor.is_floating_point() else tensor.nbytes
        mask = (parsed := parse(name)) is not None and parsed.kind == "mask"
        if self._writer is not None and not mask and tensor.device.type == "cpu" and self._writer.writes_at_once(tensor.nbytes):
            from pita.torch_dump import as_numpy

            self._writer.add(name, as_numpy(name, tensor), at_once=True)  # written now, from its own memory: no copy of the largest tensors
            return
        tensor = tensor.to("cpu", copy=True)
        if mask:
            self._masks[name] = tensor
        if self._writer is None:
            self.tensors[name] = tensor
        else:
            from pita.torch_dump import as_numpy

            self._writer.add(name, as_numpy(name, tensor))


# --- helpers -----------------------------------------------------------------------------------


def _selected_modules(torch, model, depth, include, exclude) -> set[str]:
    """The paths of the modules whose outputs are recorded; refuses a selection that is not one."""
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise UsageError(f"depth must be a positive integer (1: the model's children only), got {depth!r}")
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"record records a torch.nn.Module, got {type(model).__name__}")
    paths = [name for name, module in model.named_modules() if module is not model]
    include, exclude = _patterns(paths, "include", include), _patterns(paths, "exclude", exclude)
    return {path for path in paths
            if (depth is None or path.count(".") < depth)
            and (include is None or any(fnmatchcase(path, pattern) for pattern in include))
            and not any(fnmatchcase(path, pattern) for pattern in exclude or ())}


def _patterns(paths: list[str], label: str, patterns) -> list[str] | None:
    """`patterns` as a list of strings, each matching some module path, or None."""
    if patterns is None:
        return None
    if isinstance(patterns, str) or not all(isinstance(p, str) for p in _iterable(patterns, label)):
        raise UsageError(f"{label} must be a list of fnmatch patterns on module paths (['h.*.attn']), got {patterns!r}")
    for pattern in patterns:
        if not any(fnmatchcase(path, pattern) for path in paths):
            example = f" (module paths look like {paths[-1]!r})" if paths else " (the model has no submodules)"
            raise UsageError(f"{label} pattern {pattern!r} matches no module of the model{example}")
    return list(patterns)


def _iterable(value, label: str):
    try:
        return list(value)
    except TypeError:
        raise UsageError(f"{label} must be a list of fnmatch patterns on module paths (['h.*.attn']), got {value!r}") from None


def _floating_buffers(model) -> list[tuple]:
    """(path, tensor) of the model's persistent floating buffers, in `named_buffers()` order.
    Integer ones (`num_batches_tracked`) are left out, as are non-persistent ones (constants such as
    rotary frequencies, outside the state dict a port loads)."""
    transient = {f"{prefix}.{name}" if prefix else name for prefix, module in model.named_modules()
                 for name in getattr(module, "_non_persistent_buffers_set", ())}
    return [(name, buffer) for name, buffer in model.named_buffers() if buffer.is_floating_point() and name not in transient]


# The settings recorded of each kind of module, by PyTorch's attribute names (docs/settings.md).
# Matched by class name along the module's class hierarchy, so a subclass records its base's;
# `bias` is whether the module has one (a tensor or None; an RNN's is a bool already).
MODULE_SETTINGS = {
    "_NormBase": ("num_features", "eps", "momentum", "affine", "track_running_stats"),  # BatchNorm*, InstanceNorm*
    "LayerNorm": ("normalized_shape", "eps", "elementwise_affine", "bias"),
    "GroupNorm": ("num_groups", "num_channels", "eps", "affine"),
    "RMSNorm": ("normalized_shape", "eps", "elementwise_affine"),
    "_DropoutNd": ("p",),
    "GELU": ("approximate",),
    "_ConvNd": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "padding_mode", "bias"),
    "Linear": ("in_features", "out_features", "bias"),
    "Embedding": ("num_embeddings", "embedding_dim", "padding_idx", "max_norm", "scale_grad_by_freq"),  # sparse: same numbers
    "MultiheadAttention": ("embed_dim", "num_heads", "dropout", "batch_first", "add_zero_attn"),
    "RNNBase": ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional"),
    "TransformerEncoderLayer": ("norm_first", "activation"),
    "TransformerDecoderLayer": ("norm_first", "activation"),
    "Upsample": ("mode", "align_corners", "scale_factor", "size"),
    "_Loss": ("reduction", "ignore_index", "label_smoothing", "weight", "pos_weight"),
}


def module_settings(model) -> dict:
    """The `modules` metadata: `{path: {"kind": <class name>, "settings": {attribute: value}}}` for
    every module (`named_modules()`, the model itself as "") of a kind `MODULE_SETTINGS` lists."""
    modules = {}
    for path, module in model.named_modules():
        entry = _settings_of(module)
        if entry is not None:
            modules[path] = entry
    return modules


def loss_settings(loss_fn) -> dict | None:
    """The `loss_fn` metadata: the loss's kind and settings, None for a loss that is not a module."""
    torch = _torch()
    return _settings_of(loss_fn) if isinstance(loss_fn, torch.nn.Module) else None


def _settings_of(module) -> dict | None:
    torch = _torch()
    names = [name for base in type(module).__mro__ for name in MODULE_SETTINGS.get(base.__name__, ())]
    if not names:
        return None
    settings = {}
    for name in dict.fromkeys(names):
        if not hasattr(module, name):
            continue
        value = getattr(module, name)
        if name == "bias" and not isinstance(value, bool):
            value = value is not None
        elif name == "activation" and callable(value):  # F.relu, or a module: by its name
            value = getattr(value, "__name__", type(value).__name__).lower()
        settings[name] = _jsonable(torch, value)
    return {"kind": type(module).__name__, "settings": settings}


def _optimizer_settings(torch, optimizer) -> str:
    """The `optimizer` metadata: `{"framework": "torch", "name": ..., "groups": [...]}`, each group
    without its parameters (`params`, `param_names`), with its values made JSON-able."""
    groups = [{key: _jsonable(torch, value) for key, value in group.items() if key not in ("params", "param_names")}
              for group in optimizer.param_groups]
    return json.dumps({"framework": "torch", "name": type(optimizer).__name__, "groups": groups})


def _jsonable(torch, value):
    """A tensor as a float (or a list), a tuple as a list, a non-finite float and anything else
    JSON has no form for as its repr."""
    if isinstance(value, torch.Tensor):
        value = value.item() if value.numel() == 1 else value.tolist()
    if isinstance(value, (tuple, list)):
        return [_jsonable(torch, item) for item in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return repr(value)


def _device(torch, model):
    """The device of the model's first parameter (or buffer), the CPU for a model with neither."""
    tensor = next(itertools.chain(model.parameters(), model.buffers()), None)
    return torch.device("cpu") if tensor is None else tensor.device


def _first_tensor(torch, output):
    """The tensor an activation is recorded by: the output, or the first tensor met walking it
    depth-first, in order, through tuples and lists (`nn.MultiheadAttention`) and mappings'
    values (transformers' `ModelOutput`): `a` of `((a, b), c)`. None when there is none. Each
    container is entered once, so a list that holds itself ends the walk too."""
    pending, entered = [output], set()
    while pending:
        value = pending.pop()
        if isinstance(value, torch.Tensor):
            return value
        if isinstance(value, (Mapping, tuple, list)) and id(value) not in entered:
            entered.add(id(value))
            pending.extend(reversed(list(value.values() if isinstance(value, Mapping) else value)))
    return None


def _dtype_name(model) -> str:
    """`float32`: the floating dtype(s) of the model's parameters, `none` when it has none."""
    names = sorted({str(p.dtype).removeprefix("torch.") for p in model.parameters() if p.is_floating_point()})
    return ",".join(names) or "none"


def _floating_dtype(torch, dtype):
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype.removeprefix("torch."), dtype)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise UsageError(f"dtype must be a floating torch dtype (torch.float64), got {dtype!r}")
    return dtype


def _cast(torch, value, dtype):
    """`value` with its floating tensors cast to `dtype`, through tuples, lists and dicts."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast(torch, v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(torch, v, dtype) for k, v in value.items()}
    return value


def _built(torch, factory, model):
    if not callable(factory):
        raise UsageError(f"optimizer must be a torch.optim.Optimizer or a factory taking the parameters, got {type(factory).__name__}")
    optimizer = factory(model.parameters())
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise UsageError(f"the optimizer factory returned a {type(optimizer).__name__}, not a torch.optim.Optimizer")
    own = {id(p) for p in model.parameters()}
    if not all(id(p) in own for group in optimizer.param_groups for p in group["params"]):
        raise UsageError("the optimizer factory returned an optimizer over tensors that are not the parameters it was given "
                         "(build it from its argument: lambda params: torch.optim.Adam(params, ...))")
    return optimizer


def _constructor_defaults(optimizer) -> dict:
    """The instance's `defaults` its constructor takes back: torch 2.15's AdamW keeps
    `decoupled_weight_decay` in them but does not accept it (its class fixes it); each group's own
    value still comes back with `load_state_dict`."""
    accepted = inspect.signature(type(optimizer).__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        return dict(optimizer.defaults)
    return {key: value for key, value in optimizer.defaults.items() if key in accepted}


def _optimizer_for_copy(torch, optimizer, original, model, state=None):
    """The optimizer of the copied model: the factory called on its parameters, or the instance
    rebuilt over them (same type, defaults, groups, hyper-parameters, and state: `state`, a
    `state_dict()` taken earlier, or the instance's own now)."""
    if optimizer is None:
        return None
    if not isinstance(optimizer, torch.optim.Optimizer):
        return _built(torch, optimizer, model)
    names = {id(p): name for name, p in original.named_parameters()}
    copies = dict(model.named_parameters())
    groups = []
    for group in optimizer.param_groups:
        missing = [p for p in group["params"] if id(p) not in names]
        if missing:
            raise UsageError(f"the optimizer holds {len(missing)} tensor(s) that are not the model's parameters: "
                             "pass a factory (lambda params: torch.optim.Adam(params, ...)) to build the copy's optimizer")
        params = [copies[names[id(p)]] for p in group["params"]]
        groups.append({"params": list(zip(group["param_names"], params)) if "param_names" in group else params})
    try:
        rebuilt = type(optimizer)(groups, **_constructor_defaults(optimizer))
        rebuilt.load_state_dict(optimizer.state_dict() if state is None else state)
    except (TypeError, ValueError, KeyError) as error:
        raise UsageError(f"cannot rebuild {type(optimizer).__name__} for the {_dtype_name(model)} copy ({error}): "
                         "pass a factory (lambda params: ...) instead of the instance") from None
    return rebuilt
