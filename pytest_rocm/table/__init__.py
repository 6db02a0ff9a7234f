"""The compatibility table (``rocm-compat table``, and the table ``rocm-compat run`` writes): the
views of many reports side by side, one floor above ``report/`` (the report/1 document and the rules
read from it, which the plugin, vet, the atlas and the workload use as well).

``model`` (cells, rows, the merged table, CSV), ``grid`` (the summary and the rows each view
shows), ``oneline`` (a failed cell in one line), ``speed`` / ``speed_html`` (the speed block),
``perf_chart`` (the HTML page's speed chart), ``markdown`` / ``html`` (the two pages),
``boundary_map`` (which boundary values the rows exercised), ``repro_link`` (where a cell and
``diff`` point at a reproducer), ``formats`` (the table in each output format). Stdlib only: neither
torch nor pytest (docs/design.md, tests/layout).
"""
