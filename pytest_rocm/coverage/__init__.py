"""Coverage by construction: covering arrays (``arrays``) over the boundary dimensions of each op
family (``catalogue``), and the coverage map a report's rows add up to (``table.boundary_map``).

Pure: no torch, no pytest. The bundled boundary suite builds its rows from here; the table reads the
same catalogue to say which values of which dimension no row tried.
"""
