"""What this machine is: the Environment (schema ``pytest-rocm/environment/1``) and how it is found.

- ``arch``: gfx names, families and overrides, from ``data/gfx.json``;
- ``seam``: every read of the outside world (sysfs, /dev/kfd, variables, metadata, torch) behind
  one object that tests replace;
- ``model``: the Environment dataclasses and their JSON; ``system`` and ``detect``: the kernel's
  and torch's view, read through the seam; ``render``: the readable summary.

Rules: stdlib (and ``packaging``) only; never pytest; torch only through ``Seam.load_torch``; no
import from any other layer but ``_resources`` (docs/design.md, tests/layout).
"""
