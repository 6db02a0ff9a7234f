"""The documented path of the hypothesis strategies before the layout moved them (docs/parity.md).

Kept so property tests written against it keep working; the module is
``pytest_rocm.parity.strategies`` (it imports torch and hypothesis).
"""

from pytest_rocm.parity.strategies import matmul_shapes, profile_settings, rocm_gpu_settings, shapes, tensors

__all__ = ["matmul_shapes", "profile_settings", "rocm_gpu_settings", "shapes", "tensors"]
