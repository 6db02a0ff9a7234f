"""Workloads: the distinct aten op calls of a real program, captured and replayed as parity rows.

- ``capture`` (torch): a dispatch mode that records op signatures (``pytest_rocm.capture()``),
  and ``composite``: a function mode beside it recording composite calls (LSTM, SDPA) as themselves;
- ``bootstrap`` (stdlib until the target runs): ``rocm-compat capture``'s child process;
- ``schema`` and ``signature`` (stdlib): the ``pytest-rocm/workload/1`` file, ids and readable text;
- ``limits`` (stdlib): what tensor metadata may ask for, at load and per row;
- ``purity`` and ``guard`` (torch): a row runs only pure computation that fits the memory limit;
- ``inputs``, ``indices``, ``references``, ``vendors``, ``compare`` and ``replay`` (torch): one
  signature run on the device under test against float64 on the CPU.

docs/workload.md describes the file and the rows.
"""
