"""A fleet's atlas (``rocm-compat atlas REPORTS_DIR -o SITE``): a static site of what many reports,
from many machines and dates, measured (docs/clusters.md). ``model`` (runs, rows, histories),
``names`` (one page per name), ``cells`` (the index's cells and notes), ``collect`` (finding and
reading the reports), ``site`` (the pages). torch-free, pytest-free."""
