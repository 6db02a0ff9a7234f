"""Performance measurement: how fast a row ran, not only whether it passed (docs/perf.md).

``stats`` (median and spread of timings, work -> throughput) and ``peaks`` (data/peaks.json: the
device's published peak) are torch-free; ``measure`` (warm-up, device synchronisation, the timed
repetitions) and ``backend`` (which BLAS library / SDPA backend ran) use torch. The plugin's
``perf`` fixture records a measurement on the test (``PERF_PROPERTY``), and the report stores it
as ``results[*].perf``.
"""
