"""Every ``user_properties`` key through which a test, a fixture or the plugin hands data to the
report: the one place they are named (``report.records.build_record`` reads them all).

Pure and stdlib only. ``PARITY_PROPERTY`` and ``INFO_PROPERTY`` are public (``from pytest_rocm
import INFO_PROPERTY``): a test records its own facts or parity records under them.
"""

from __future__ import annotations

#: value: a list of parity record dicts (docs/design.md, report/1; read by ``parity.reading``)
PARITY_PROPERTY = "rocm_parity"
#: value: a dict of facts (library version, backend that ran...), merged into the record's ``info``
INFO_PROPERTY = "rocm_info"
#: value: one perf record dict (pytest_rocm.perf.stats, docs/perf.md)
PERF_PROPERTY = "rocm_perf"
#: set by the plugin: the ``feature`` marker's name, from a worker to the controller
FEATURE_PROPERTY = "rocm_feature"
#: set by the plugin: a test's own ``timeout`` marker (seconds), so the controller can tell a worker
#: killed by that timeout from a crash (the setup report brings it before the call starts)
TIMEOUT_PROPERTY = "rocm_timeout"
#: set by the plugin: whether the test allocated on the accelerator (plugin.accelerator)
ACCELERATOR_PROPERTY = "rocm_accelerator"

#: every key above, the ones a test may write first
PROPERTIES = (PARITY_PROPERTY, INFO_PROPERTY, PERF_PROPERTY, FEATURE_PROPERTY, TIMEOUT_PROPERTY, ACCELERATOR_PROPERTY)
