"""Recording a PyTorch training run for `pita trace` (the convention: docs/recording.md).

`record(model, inputs, targets, loss_fn, path, optimizer, steps=2)` runs a short training run and
writes one recording; `Recorder(model)` records a custom loop. Both name tensors by PyTorch's own
traversal (`named_parameters()`, `named_modules()`), never by a hand-written list, and write
through `pita.torch_dump.write_torch_dump`, so the provenance keys are a dump's usual ones.

torch is imported only when a function here is called or a `Recorder` is created: `import
pita.torch` works without it, and a call says that it needs torch.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from pathlib import Path

from pita.errors import UsageError
from pita.recording import RECORDING, act_name, check_metadata, check_step, grad_name, loss_name, optim_name, param_name, step_name

ACTIVATIONS = ("first", "none")

__all__ = ["RECORDING", "Recorder", "record"]


def _torch():
    try:
        import torch
    except ImportError as error:
        raise ImportError("pita.torch records a PyTorch run and needs torch, which is not installed here "
                          f"(pip install torch); the rest of pita works without it ({error})") from None
    return torch


def record(model, inputs, targets, loss_fn: Callable, path: str | Path, optimizer=None, steps: int = 1, *, dtype=None,
           optimizer_state: bool = False, **metadata) -> Path:
    """Runs `steps` training steps of `model` and writes their recording to `path` (`.safetensors`,
    with its JSON form beside it when small enough; `.json` or `.npz` also work). Returns the path.

    Each step is `loss = loss_fn(model(*inputs), targets)`, `loss.backward()`, then
    `optimizer.step()`. Recorded: `param/*` before step 1, `act/*` of the first forward pass,
    `loss/<k>` of every step, `grad/*` of step 1, `step<k>/*` after every optimizer step, and with
    `optimizer_state=True` the optimizer's per-parameter state `optim<k>/<path>/<state>`.

    - `inputs`: a tensor, or a tuple (or list) of the model's positional arguments.
    - `targets`: passed to `loss_fn` as given (a tensor, a tuple, anything).
    - `optimizer=None`: forward, loss and backward of one step only (`steps` must be 1); no
      `step<k>/` tensors. Else a `torch.optim.Optimizer` over the model's parameters, or a factory
      `lambda params: torch.optim.Adam(params, lr=1e-3)` called with `model.parameters()`, which
      must return an optimizer over those parameters (all or some).
    - Gradients are set to None before each step (`model.zero_grad(set_to_none=True)`), so
      gradients left from before the call do not leak into `grad/*`.
    - The model runs in the mode it is in (`train()` or `eval()`): dropout draws random numbers,
      so seed both sides or call `model.eval()`. `optimizer.step()` is called without a closure
      (for LBFGS, write the loop with `Recorder`).
    - `dtype=None`: the run happens on `model` itself, whose parameters the optimizer steps (the
      model is trained `steps` steps by the call). `dtype=torch.float64` (or another floating
      dtype): the run happens on a deep copy of the model cast to `dtype`, with floating tensors in
      `inputs` and `targets` cast too (integer ones, such as token ids, stay as they are); `model`
      and `optimizer` are left untouched. The copy's optimizer is the factory called on the copy's
      parameters, or, for an optimizer instance, `type(optimizer)(<the copy's parameters, grouped as
      in optimizer.param_groups>, **optimizer.defaults)` given `optimizer.state_dict()` (so every
      group's hyper-parameters and any state it already holds carry over, cast to `dtype`). An
      optimizer whose constructor does not take its own `defaults` needs a factory.
    - `metadata`: extra metadata, written as strings (`experiment`, `input_sha256`, `batch_size`,
      which lets compare explain a factor equal to the batch size, …).

    A run that raises leaves no file and no hooks behind. `path` and `metadata` are checked
    before the first step: a path the writer would refuse (a folder, a FIFO or device, a suffix
    it does not write, a folder that cannot be written to) costs no run.
    """
    torch = _torch()
    from pita.torch_dump import check_torch_dump_path

    check_metadata(metadata)  # before the run, which trains `model`
    path = check_torch_dump_path(path)  # likewise: the writer's own checks, so a bad path costs no run
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise UsageError(f"steps must be a positive integer, got {steps!r}")
    if optimizer is None and steps != 1:
        raise UsageError(f"steps={steps} needs an optimizer: without one, record runs forward, loss and backward of one step only")
    if optimizer_state and optimizer is None:
        raise UsageError("optimizer_state=True needs an optimizer")
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if dtype is not None:
        dtype = _floating_dtype(torch, dtype)
        original, model = model, copy.deepcopy(model).to(dtype)
        inputs = _cast(torch, inputs, dtype)
        targets = _cast(torch, targets, dtype)
        optimizer = _optimizer_for_copy(torch, optimizer, original, model)
    elif optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        optimizer = _built(torch, optimizer, model)
    with Recorder(model, optimizer_state=optimizer_state) as recorder:
        recorder.params()
        for k in range(1, steps + 1):
            model.zero_grad(set_to_none=True)
            loss = loss_fn(model(*inputs), targets)
            recorder.loss(k, loss)
            loss.backward()
            if k == 1:
                recorder.grads()
            if optimizer is not None:
                optimizer.step()
                recorder.step(k, optimizer)
        return recorder.write(path, **metadata)


class Recorder:
    """Records a custom training loop, name for name as docs/recording.md says.

    ```python
    with pita.torch.Recorder(model) as recorder:
        recorder.params()
        for k in (1, 2):
            loss = loss_fn(model(inputs), targets)     # act/* recorded in the first forward only
            recorder.loss(k, loss)
            loss.backward()
            if k == 1:
                recorder.grads()
            optimizer.step(); optimizer.zero_grad()
            recorder.step(k, optimizer)
        recorder.write("torch-record.safetensors", experiment="myport")
    ```

    Entering the context puts a forward hook on every submodule; `model`'s own output is not
    recorded (it is its last module's; its hook only ends the pass). Each records the module's output as `act/<module path>` when its call
    ends, so a child comes before its parent; the n-th call (n ≥ 2) of a module called more than
    once is `act/<module path>#<n>`. Only the first forward pass is recorded: hooks record from
    entering until the first call of `model` ends, or until `loss`, `grads` or `step` is first
    called (which ends the pass of a loop that calls submodules directly). An output that is not
    a tensor is recorded by the first tensor in it, depth-first and in order through tuples,
    lists and mappings' values (`a` of `((a, b), c)`); an output holding no tensor (None) is
    skipped. Leaving the context removes the hooks, also on an
    exception.

    Names are PyTorch's: `model.named_parameters()` for parameters, `model.named_modules()` for
    modules. A shared (tied) parameter is named once, by the first name `named_parameters()` gives
    it; a module instance registered under two paths likewise has one name, and its calls through
    either path are numbered together.

    Every tensor is detached and copied to host memory when recorded, so later in-place updates
    (an optimizer step, `ReLU(inplace=True)`) do not change what was recorded, and recorded
    activations hold no device memory. The `backend` metadata still names the devices the
    tensors came from. A sparse tensor (the gradient of `nn.Embedding(sparse=True)`) is recorded
    dense, its name listed in the `densified` metadata key; a nested tensor is refused, named.

    - `activations`: `"first"` (the first forward pass, as above) or `"none"` (no hooks).
    - `optimizer_state`: `step(k, optimizer)` also records the optimizer's per-parameter state.
    """

    def __init__(self, model, *, activations: str = "first", optimizer_state: bool = False):
        torch = _torch()
        if not isinstance(model, torch.nn.Module):
            raise UsageError(f"Recorder records a torch.nn.Module, got {type(model).__name__}")
        if activations not in ACTIVATIONS:
            raise UsageError(f"activations must be one of {', '.join(map(repr, ACTIVATIONS))}, got {activations!r}")
        self.model = model
        self.activations = activations
        self.optimizer_state = optimizer_state
        self.tensors: dict = {}  # name -> the recorded tensor (detached, on the host)
        self.execution_order: list[str] = []  # the act/ names, in the order their calls ended
        self.no_grad: list[str] = []  # parameters grads() found without a gradient
        self.densified: list[str] = []  # names recorded from a sparse tensor, as dense
        self.steps: set[int] = set()
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
        if self.activations == "first" and not self._pass_over:
            try:
                for name, module in self.model.named_modules():
                    if module is not self.model:
                        self._handles.append(module.register_forward_hook(self._hook(name)))
                self._handles.append(self.model.register_forward_hook(self._end_of_pass))
            except BaseException:
                self._remove_hooks()
                raise
            self._listening = True
        return self

    def __exit__(self, *exc_info) -> None:
        self._remove_hooks()

    def _remove_hooks(self) -> None:
        self._listening = False
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _hook(self, name: str):
        def hook(module, args, output):
            if not self._listening:
                return
            tensor = _first_tensor(_torch(), output)
            if tensor is None:
                return
            n = self._calls.get(name, 0) + 1
            self._calls[name] = n
            key = act_name(name, n)
            self._keep(key, tensor)
            self.execution_order.append(key)

        return hook

    def _end_of_pass(self, module, args, output) -> None:
        self._end_forward()

    # --- what is recorded ---------------------------------------------------------------------

    def params(self) -> None:
        """`param/<path>`: every parameter as it is now (call it before the first step)."""
        for name, parameter in self.model.named_parameters():
            self._keep(param_name(name), parameter)

    def loss(self, k: int, loss) -> None:
        """`loss/<k>`: the loss of step k (k = 1, 2, …), one element, stored with shape `[1]`."""
        torch = _torch()
        self._end_forward()
        name = loss_name(k)
        loss = loss if isinstance(loss, torch.Tensor) else torch.tensor(loss)
        if loss.numel() != 1:
            raise UsageError(f"loss {k} has shape {list(loss.shape)}: record the reduced loss (one element)")
        self._keep(name, loss.reshape(1))

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

    def step(self, k: int, optimizer=None) -> None:
        """`step<k>/<path>`: every parameter after optimizer step k. With `optimizer_state=True`
        also `optim<k>/<path>/<state>`: each tensor of the parameter's shape that the optimizer
        keeps for it, by its key in `optimizer.state` (`exp_avg`, `exp_avg_sq` for Adam,
        `momentum_buffer` for SGD with momentum). Counters such as Adam's `step` (0-d) are not
        recorded: burn keeps them as plain integers, so they would be one-sided names."""
        torch = _torch()
        self._end_forward()
        check_step(k)
        if self.optimizer_state and optimizer is None:
            raise UsageError(f"step({k}): this Recorder records the optimizer's state; pass the optimizer")
        for name, parameter in self.model.named_parameters():
            self._keep(step_name(k, name), parameter)
        if self.optimizer_state:
            for name, parameter in self.model.named_parameters():
                for key, value in optimizer.state.get(parameter, {}).items():
                    if isinstance(value, torch.Tensor) and value.shape == parameter.shape:
                        self._keep(optim_name(k, name, key), value)
        self.steps.add(k)

    def write(self, path: str | Path, **metadata) -> Path:
        """Writes the recording with `pita.torch_dump.write_torch_dump` (atomically; the JSON form
        beside a `.safetensors` file when small enough) and returns the path. Metadata: the
        provenance, `recording`, `execution_order`, `steps`, `dtype`, `no_grad` when a parameter
        had no gradient, `densified` when a sparse tensor was recorded, and `metadata` (strings; the recorder's own keys and the provenance keys,
        `pita.recording.RECORDER_KEYS` and `PROVENANCE_KEYS`, are refused)."""
        from pita.torch_dump import write_torch_dump

        check_metadata(metadata)
        own = {"recording": RECORDING, "execution_order": json.dumps(self.execution_order), "steps": str(len(self.steps)),
               "dtype": self._dtype}
        if self.no_grad:
            own["no_grad"] = json.dumps(self.no_grad)
        if self.densified:
            own["densified"] = json.dumps(self.densified)
        if self._devices:
            own["backend"] = ", ".join(sorted(self._devices))
        return write_torch_dump(path, self.tensors, **{**own, **metadata})

    def _end_forward(self) -> None:
        self._listening = False
        self._pass_over = True

    def _keep(self, name: str, tensor) -> None:
        if name in self.tensors:
            raise UsageError(f"{name} is already recorded")
        if tensor.is_nested:
            raise UsageError(f"{name}: a nested tensor, which a recording cannot hold (a dump holds dense tensors)")
        self._devices.add(str(tensor.device))
        tensor = tensor.detach()
        if tensor.layout != _torch().strided:  # a sparse gradient (nn.Embedding(sparse=True)), a sparse activation
            tensor = tensor.to_dense()
            self.densified.append(name)
        self.tensors[name] = tensor.to("cpu", copy=True)


# --- helpers -----------------------------------------------------------------------------------


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


def _optimizer_for_copy(torch, optimizer, original, model):
    """The optimizer of the copied model: the factory called on its parameters, or the instance
    rebuilt over them (same type, defaults, groups, hyper-parameters and state)."""
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
        rebuilt = type(optimizer)(groups, **optimizer.defaults)
        rebuilt.load_state_dict(optimizer.state_dict())
    except (TypeError, ValueError, KeyError) as error:
        raise UsageError(f"cannot rebuild {type(optimizer).__name__} for the {_dtype_name(model)} copy ({error}): "
                         "pass a factory (lambda params: ...) instead of the instance") from None
    return rebuilt
