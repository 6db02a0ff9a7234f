"""Numerical parity: the device's results against a CPU float64 reference (docs/parity.md).

``check`` (``assert_parity``) and ``metrics`` import torch; ``result`` (ParityResult, ParityError,
the record the report stores) and ``tolerances`` (dtype tables, default tolerances, the
``tolerance`` marker's values) are torch-free, so the plugin and the report can use them without
torch. ``strategies`` (hypothesis) is an explicit import that the plugin never makes. The public
names (``assert_parity``, ``ParityResult`` ...) are imported from ``pytest_rocm``.
"""
