"""``rocm-compat setup``: the torch build for this machine, then the extras, into the running
interpreter's environment.

- ``setup.torch_fit``: whether the installed torch fits this machine (the doctor's checks decide)
  and which build a package index's version is (``2.13.0+cpu``: cpu);
- ``setup.plan``: the pip commands, as data (``--dry-run`` prints them);
- ``setup.apply``: running them through the seam (``env.seam``: pip, the index probe).

Never imports torch itself: detection does, through the seam, when the CLI asks.
"""
