"""The recording convention (docs/recording.md), in one place: what a recorder names each tensor
and which metadata it writes, so that `pita trace` can walk any two recordings. A recorder for
another framework calls the builders and `check_metadata`; trace reads names with `parse`.

- A recording is a dump (docs/dump-format.md) whose metadata `recording` is `RECORDING`.
- Names: `param/<path>` (before step 1), `act/<module>` (the first forward pass; the n-th call of
  a module, n >= 2, is `act/<module>#<n>`), `loss/<k>`, `grad/<path>` (step 1), `step<k>/<path>`
  (after optimizer step k), `optim<k>/<path>/<state>` (the optimizer's state for a parameter),
  `init/<path>` (as initialised, before loading: read by trace's load audit, never walked),
  `mask<k>/<module>` (the keep-mask, BOOL, of a random op (dropout) called inside that module in
  step k's forward, `#n` for its n-th call; read by trace to explain random ops and by the burn
  crate to replay them, never walked), `gradnorm<k>/<path>` (the L2 norm of the parameter's
  gradient in step k, 0-d, in the run's dtype: a light recording's per-step figure). A buffer (`running_mean`) after step k is
  `step<k>/<buffer path>`, listed in the metadata key `buffers`.
  `<path>` and `<module>` are PyTorch's (`named_parameters()`, `named_modules()`); k and n run
  from 1 to `MAX_NUMBER` (nine digits), with no leading zero.
- Phases, in walk order: parameters (`param/`), forward (`act/`), loss (`loss/1`), backward
  (`grad/`), step (`step<k>/`, `optim<k>/`, `gradnorm<k>/`, `loss/<k>` for k >= 2); a name outside the
  convention is walked last, in `OTHER`.
- Metadata: the recorder writes `RECORDER_KEYS` itself; user metadata may set none of them, nor
  `PROVENANCE_KEYS`, which every dump writer sets from what it knows (a dump that lies about its
  framework would be compared as what it is not).

The Rust crate (`pita::record`) follows the same convention; tests/data/recording-convention.json
holds both to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pita.errors import UsageError

RECORDING = "pita-record/1"  # the `recording` metadata key's value
PHASES = ("parameters", "forward", "loss", "backward", "step")
OTHER = "other"  # the phase of a name outside the convention
MAX_NUMBER = 999_999_999  # k and n have at most nine digits: a name never holds a number too long to read

PARAM, ACT, LOSS, GRAD, INIT = "param/", "act/", "loss/", "grad/", "init/"

# written by the recorder itself: `buffers` (a JSON list of buffer paths recorded after each step),
# `optimizer` (a JSON object: the optimizer's name and settings, in its framework's own names),
# `reference64` (the file name of the float64 run beside this recording), `masks_replayed` (how
# many random masks the run took from a reference recording instead of its own generator),
# `modules` (a JSON object: every module's kind and settings by its path) and `loss_fn` (the
# loss's kind and settings, when it is a module), in the framework's own names (docs/settings.md),
# and `every` (a light recording's checkpoint period k: `step<j>/` only for j a multiple of k, and N)
RECORDER_KEYS = ("recording", "execution_order", "steps", "dtype", "no_grad", "densified",
                 "buffers", "optimizer", "reference64", "masks_replayed", "modules", "loss_fn", "every")
PROVENANCE_KEYS = ("format", "framework", "framework_version")  # written by every dump writer itself

_NUMBER = r"([1-9][0-9]{0,8})"
_CALL = re.compile(r"(.*)#([2-9]|[1-9][0-9]{1,8})", re.DOTALL)
_LOSS = re.compile(LOSS + _NUMBER)
_STEP = re.compile(r"step" + _NUMBER + r"/(.+)", re.DOTALL)
_OPTIM = re.compile(r"optim" + _NUMBER + r"/(.+)/([^/]+)", re.DOTALL)
_MASK = re.compile(r"mask" + _NUMBER + r"/(.+)", re.DOTALL)
_GRADNORM = re.compile(r"gradnorm" + _NUMBER + r"/(.+)", re.DOTALL)
_PREFIX = re.compile(r"(param|act|loss|grad|init|step[0-9]+|optim[0-9]+|mask[0-9]+|gradnorm[0-9]+)/")


@dataclass(frozen=True)
class RecordedName:
    """What a recorded name says. `kind` is its prefix (`param`, `act`, `loss`, `grad`, `step`,
    `optim`, `gradnorm`, `init`, `mask`); `phase` is one of `PHASES`, or None for `init/` and `mask<k>/` (not walked)."""

    kind: str
    phase: str | None
    step: int | None = None  # k of loss/<k>, step<k>/, optim<k>/, gradnorm<k>/, mask<k>/
    path: str | None = None  # the parameter path of param/, grad/, step<k>/, optim<k>/, gradnorm<k>/, init/
    module: str | None = None  # the module path of act/ and mask<k>/
    call: int | None = None  # act/ and mask<k>/: 1 for the first call, n for `#n`
    state: str | None = None  # optim<k>/: the optimizer's key (`exp_avg`)


# --- building names ------------------------------------------------------------------------------


def check_step(k) -> None:
    """Refuses a step number the convention cannot hold (`UsageError`)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"steps are numbered 1, 2, …; got {k!r}")
    if k > MAX_NUMBER:
        raise UsageError(f"steps are numbered 1 to {MAX_NUMBER} (nine digits); got {k}")


def param_name(path: str) -> str:
    return PARAM + path


def act_name(module: str, call: int = 1) -> str:
    """`act/<module>` for the first call, `act/<module>#<call>` for a later one."""
    if isinstance(call, bool) or not isinstance(call, int) or not 1 <= call <= MAX_NUMBER:
        raise UsageError(f"calls are numbered 1 to {MAX_NUMBER}; got {call!r}")
    return f"{ACT}{module}" if call == 1 else f"{ACT}{module}#{call}"


def loss_name(k: int) -> str:
    check_step(k)
    return f"{LOSS}{k}"


def grad_name(path: str) -> str:
    return GRAD + path


def step_name(k: int, path: str) -> str:
    check_step(k)
    return f"step{k}/{path}"


def optim_name(k: int, path: str, state: str) -> str:
    check_step(k)
    return f"optim{k}/{path}/{state}"


def gradnorm_name(k: int, path: str) -> str:
    """`gradnorm<k>/<path>`: the L2 norm of the parameter's gradient in step k."""
    check_step(k)
    return f"gradnorm{k}/{path}"


def init_name(path: str) -> str:
    return INIT + path


def mask_name(k: int, module: str, call: int = 1) -> str:
    """`mask<k>/<module>` for the first random op called inside `module` in step k's forward,
    `mask<k>/<module>#<call>` for a later one."""
    check_step(k)
    return f"mask{k}/{act_name(module, call)[len(ACT):]}"


# --- reading names -------------------------------------------------------------------------------


def _module_call(text: str) -> tuple[str, int]:
    if found := _CALL.fullmatch(text):
        return found[1], int(found[2])
    return text, 1


def parse(name: str) -> RecordedName | None:
    """What `name` says under the convention, or None for a name outside it (phase `OTHER`)."""
    for prefix, kind, phase in ((PARAM, "param", "parameters"), (GRAD, "grad", "backward"), (INIT, "init", None)):
        if name.startswith(prefix):
            return RecordedName(kind, phase, path=name[len(prefix):])
    if name.startswith(ACT):
        module, call = _module_call(name[len(ACT):])
        return RecordedName("act", "forward", module=module, call=call)
    if found := _MASK.fullmatch(name):
        module, call = _module_call(found[2])
        return RecordedName("mask", None, step=int(found[1]), module=module, call=call)
    if found := _LOSS.fullmatch(name):
        k = int(found[1])
        return RecordedName("loss", "loss" if k == 1 else "step", step=k)
    if found := _STEP.fullmatch(name):
        return RecordedName("step", "step", step=int(found[1]), path=found[2])
    if found := _GRADNORM.fullmatch(name):
        return RecordedName("gradnorm", "step", step=int(found[1]), path=found[2])
    if found := _OPTIM.fullmatch(name):
        return RecordedName("optim", "step", step=int(found[1]), path=found[2], state=found[3])
    return None


def looks_recorded(name: str) -> bool:
    """Whether `name` starts as a recorded name does (`param/`, `step<digits>/`, …), well formed
    or not: what tells a recording written without its `recording` key from another dump."""
    return _PREFIX.match(name) is not None


# --- metadata ------------------------------------------------------------------------------------


def check_metadata(keys: Iterable[str], *, recording: bool = True) -> None:
    """Refuses user metadata that sets a key the writer sets itself (`UsageError`): the
    provenance keys, and for a recording (`recording=True`) the recorder's keys too."""
    keys = set(keys)
    groups = ((RECORDER_KEYS, "the recorder"),) if recording else ()
    for reserved, writer in groups + ((PROVENANCE_KEYS, "the dump writer"),):
        taken = sorted(keys & set(reserved))
        if taken:
            raise UsageError(f"metadata {', '.join(map(repr, taken))}: set by {writer} itself")
