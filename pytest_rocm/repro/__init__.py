"""``rocm-compat repro``: standalone reproducers of failed parity checks, and ISSUE.md.

``spec`` (reading a report's ``repro`` spec, every field checked), ``write`` (the scripts from
``template.py``, a file that is read as text and never imported here), ``issue`` (ISSUE.md).
Stdlib only, like ``report``: torch is needed by the scripts, not by the command.
"""
