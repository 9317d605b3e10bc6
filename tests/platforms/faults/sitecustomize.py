"""Simulated faults of a learner's machine (see ../README.md), which the grader must never charge to the learner.

The file `mode` beside this one says which (workers keep no variable of the grader's environment):

- `gpu`: PyTorch's autograd as a CUDA build behaves on a machine with an NVIDIA GPU. The first backward pass
  starts device threads and marks the process: every child forked after that raises "Unable to handle
  autograd's threading in combination with fork-based multiprocessing" at its first backward pass. A grader
  that never runs autograd before it forks is unaffected;
- `gpu-zygote`: the same, and the process that forks workers runs a backward pass at start (as the grader's
  warm-up once did): its threads show, so it must refuse to fork;
- `gpu-unseen`: as `gpu-zygote`, but the device threads do not show (a fault no thread count can see);
- `no-torch-in-workers`: the workers (started with -S) cannot import torch.
"""

import importlib.abc
import importlib.util
import os
import sys
import threading

try:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "mode")) as _file:
        MODE = _file.read().strip()
except OSError:
    MODE = ""
ERROR = (
    "Unable to handle autograd's threading in combination with fork-based multiprocessing. "
    "See https://github.com/pytorch/pytorch/wiki/Autograd-and-Fork"
)
_state = {"threads": False, "broken": False}


def _forked():
    _state["broken"] = _state["threads"]


os.register_at_fork(after_in_child=_forked)


def _device_threads() -> None:
    if not _state["threads"]:
        _state["threads"] = True
        if MODE == "gpu-unseen":
            return
        try:
            threading.Thread(target=threading.Event().wait, daemon=True).start()
        except RuntimeError:  # a worker that may not start threads: the mark alone
            pass


def _engine(run):
    def backward_pass(*args, **kwargs):
        if _state["broken"]:
            raise RuntimeError(ERROR)
        _device_threads()
        return run(*args, **kwargs)

    return backward_pass


def _patch(torch) -> None:
    torch.autograd.backward = _engine(torch.autograd.backward)
    torch.autograd.grad = _engine(torch.autograd.grad)
    if MODE in ("gpu-zygote", "gpu-unseen") and "zygote" in sys.argv:
        x = torch.ones(2, requires_grad=True)
        (x * x).sum().backward()


class _OnTorchImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch":
            return None
        if MODE == "no-torch-in-workers" and sys.flags.no_site:
            raise ModuleNotFoundError("No module named 'torch' (a simulated fault of the machine)", name="torch")
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if MODE:
    sys.meta_path.insert(0, _OnTorchImport())
