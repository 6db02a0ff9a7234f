"""The compatibility report (schema ``pytest-rocm/report/1``) and everything that reads it.

``outcomes`` (the outcome vocabulary), ``records`` (the document's shape and its records),
``files`` (the sidecar and the atomic final write), ``load`` (reading and validating reports and
sidecars), ``judgement`` (a row's status), ``diff`` (the upgrade gate). The table's views are
``table/``, one floor above. Rules: stdlib only, neither torch nor pytest, so ``rocm-compat table``
and ``diff`` run anywhere (docs/design.md, tests/layout).
"""
