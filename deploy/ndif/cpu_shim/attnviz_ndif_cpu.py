"""CPU shim for a self-hosted NDIF (ndif 0.1.2, nnsight 0.8.1) on a machine without a GPU.

setup.sh copies this module and ``attnviz_ndif_cpu.pth`` into the NDIF venv's site-packages.
The .pth line imports this module in every interpreter of that venv (the API, the Ray head,
the controller and every Ray worker, which inherit the raylet's environment), but it does
nothing unless ``ATTNVIZ_NDIF_CPU=1`` (start.sh sets it). When set, it registers a post-import
hook: each patch below is applied right after its target module finishes importing, and the
torch ones only when ``torch.cuda.is_available()`` is False. Nothing is copied from NDIF; each
patch is a small stand-in written here.

What it replaces, and why (all in the model actor unless said otherwise):

torch.cuda (ndif/services/ray/deployments/modeling/{base,util}.py call these unconditionally):
  set_device(i)                          -> no-op. set_default_gpu() pins the "GPU" first.
  synchronize()                          -> no-op. Called after load, after to/from cache and
                                            after every request (cleanup()).
  empty_cache()                          -> no-op (already a no-op while CUDA is uninitialised;
                                            listed so nothing can initialise it).
  get_device_properties(i)               -> an object whose total_memory is the advertised
                                            "GPU" size (ATTNVIZ_NDIF_GPU_BYTES). Read by
                                            set_process_limits() and build_max_memory().
  set_per_process_memory_fraction(f, i)  -> no-op (set/reset_process_limits()).
  mem_get_info(i)                        -> (free, total) of host RAM (resources.py; not used
                                            by start.sh, which passes the resources itself).
  memory_allocated / max_memory_allocated / reset_peak_memory_stats -> 0 / 0 / no-op
                                            (per-request GPU accounting; ndif already wraps
                                            these in try/except, patched so logs stay clean).

nnsight.modeling.mixins.remotable.Remotable.describe_checkpoint / .max_tp_size (version skew,
not CPU-specific): ndif 0.1.2's controller (cluster/evaluator.py) calls both with a
``trust_remote_code=`` keyword that nnsight 0.8.1, the newest release, does not take, so every
deploy failed with "describe_checkpoint() got an unexpected keyword argument
'trust_remote_code'". The stand-ins accept the keyword and drop it (0.8.1 reads the flag from
the model key's JSON).

nnsight.modeling.mixins.remotable.Remotable.from_model_key:
  an integer ``device=`` (base.py passes ``device=<gpu id>`` for a one-GPU replica, which
  transformers reads as cuda:<id>) becomes ``device="cpu"``.

ndif.services.ray.deployments.modeling.util.verify_device_placement:
  the original insists every tensor is on a CUDA device in the assigned set; the stand-in
  checks that no tensor was left on the meta device and that all are on the CPU.

nnsight.modeling.transformers.TransformersModel._loaded_preprocessors (not CPU-specific; the
controller and the client both hit it):
  with transformers >= 5.2x, ``check_task(task)[1]["impl"]`` is an import-path *string*, so
  nnsight 0.8.1 reads ``_load_tokenizer`` off a str, concludes the text-generation pipeline
  loads no tokenizer, and the meta build of any checkpoint fails with "Impossible to guess
  which tokenizer to use". The controller's evaluator sizes models with that meta build, so
  every deploy failed. The stand-in resolves the string to the class first.
"""

from __future__ import annotations

import importlib
import importlib.abc
import os
import sys
import types

ENABLED = os.environ.get("ATTNVIZ_NDIF_CPU") == "1"


def _host_memory() -> tuple[int, int]:
    try:
        import psutil

        vm = psutil.virtual_memory()
        return int(vm.available), int(vm.total)
    except Exception:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return total, total


def _patch_torch(torch) -> None:
    cuda = torch.cuda
    if cuda.is_available():
        return
    gpu_bytes = int(os.environ.get("ATTNVIZ_NDIF_GPU_BYTES", str(8 * 1024**3)))

    # A fresh function per name: torch._dynamo keys its rules by function object and
    # refuses one object registered under two names.
    def returns(value):
        def stand_in(*args, **kwargs):
            return value

        return stand_in

    def get_device_properties(device=None):
        return types.SimpleNamespace(
            name="cpu (attnviz NDIF shim)", total_memory=gpu_bytes, major=0, minor=0
        )

    def mem_get_info(device=None):
        return _host_memory()

    cuda.set_device = returns(None)
    cuda.synchronize = returns(None)
    cuda.empty_cache = returns(None)
    cuda.set_per_process_memory_fraction = returns(None)
    cuda.get_device_properties = get_device_properties
    cuda.mem_get_info = mem_get_info
    cuda.reset_peak_memory_stats = returns(None)
    cuda.memory_allocated = returns(0)
    cuda.max_memory_allocated = returns(0)


def _patch_remotable(module) -> None:
    remotable = module.Remotable
    for name in ("describe_checkpoint", "max_tp_size"):
        plain = getattr(remotable, name).__func__

        def without_trust(cls, *args, _plain=plain, trust_remote_code=False, **kwargs):
            # nnsight 0.8.1 reads trust_remote_code from the model key's JSON itself.
            return _plain(cls, *args, **kwargs)

        setattr(remotable, name, classmethod(without_trust))

    original = remotable.from_model_key.__func__

    def from_model_key(cls, model_key, **kwargs):
        if isinstance(kwargs.get("device"), int) and not isinstance(kwargs["device"], bool):
            import torch

            if not torch.cuda.is_available():
                kwargs["device"] = "cpu"
        return original(cls, model_key, **kwargs)

    remotable.from_model_key = classmethod(from_model_key)


def _patch_ndif_util(module) -> None:
    def verify_device_placement(model, gpu_ids) -> None:
        inner = getattr(model, "_module", model)
        for name, tensor in [*inner.named_parameters(), *inner.named_buffers()]:
            if tensor.device.type != "cpu":
                raise RuntimeError(f"'{name}' is on '{tensor.device}', expected cpu")

    module.verify_device_placement = verify_device_placement


def _patch_nnsight_transformers(module) -> None:
    cls = module.TransformersModel
    original = cls._loaded_preprocessors

    def _loaded_preprocessors(self):
        from transformers.pipelines import check_task

        try:
            impl = check_task(self.task)[1]["impl"]
        except Exception:
            return original(self)
        if not isinstance(impl, str):
            return original(self)
        path, _, name = impl.rpartition(".")
        impl = getattr(importlib.import_module(path), name)
        flags = {
            "tokenizer": "_load_tokenizer",
            "image_processor": "_load_image_processor",
            "feature_extractor": "_load_feature_extractor",
            "processor": "_load_processor",
        }
        return {attr for attr, flag in flags.items() if getattr(impl, flag, False)}

    cls._loaded_preprocessors = _loaded_preprocessors


PATCHES = {
    "torch": _patch_torch,
    "nnsight.modeling.mixins.remotable": _patch_remotable,
    "nnsight.modeling.transformers": _patch_nnsight_transformers,
    "ndif.services.ray.deployments.modeling.util": _patch_ndif_util,
}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the real loader of a PATCHES module so its patch runs
    as soon as the module body has executed."""

    def find_spec(self, name, path, target=None):
        if name not in PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        real_exec = loader.exec_module

        def exec_module(module, _real=real_exec, _patch=PATCHES[name]):
            _real(module)
            _patch(module)

        loader.exec_module = exec_module
        return spec


if ENABLED and not any(isinstance(f, _AfterImport) for f in sys.meta_path):
    for _name, _patch in PATCHES.items():
        if _name in sys.modules:  # imported before us: patch in place
            _patch(sys.modules[_name])
    sys.meta_path.insert(0, _AfterImport())
