"""What is wrong with an Environment, with the evidence and the fix: the one diagnosis engine.

``model`` (Check, CheckStatus, Extras), ``facts`` (the knowledge in ``data/doctor.json``),
``machine`` and ``build`` (the checks: the kernel and driver, the torch build), ``checks`` (the
lists ``CHECKS``/``SYSTEM_CHECKS`` and ``diagnose``), ``render`` (text, the header's summary
line, the known-errors table), ``probe`` (the one part that reads the machine, through a Seam:
``probe_extras``, and ``diagnose_machine``, this machine probed and judged, which every command
and the header ask). ``rocm-compat doctor``, the pytest header and ``rocm-compat env`` all print these
checks' lines. Rules: neither torch nor pytest; imports ``env`` and ``_resources`` only.
"""
