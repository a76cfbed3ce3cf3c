"""The compile and autotune caches of the GPU tools a workload runs, and the variables
that name their folders: tune's ``[caches]`` exports them in /etc/profile.d
(tune/settings/caches.py), ``containers run`` carries them into a container
(containers/site.py, containers/plan.py). One table, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Mapping

# cache (its folder's name under tune's <root>/<uid>) -> the variable that names the folder
CACHES: Mapping[str, str] = {
    "cuda": "CUDA_CACHE_PATH",  # the CUDA driver's JIT cache
    "triton": "TRITON_CACHE_DIR",
    "inductor": "TORCHINDUCTOR_CACHE_DIR",  # TorchInductor's FX graph and autotuning caches
    "tensorrt": "DOLMEN_TENSORRT_CACHE_DIR",  # ours: TensorRT reads no variable
}
# What goes with the folders: CUDA's cache size, Inductor's FX graph cache switched on.
CACHE_VALUES = ("CUDA_CACHE_MAXSIZE", "TORCHINDUCTOR_FX_GRAPH_CACHE")
