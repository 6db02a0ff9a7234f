"""Parity fixtures and the tolerance marker (scaffold)."""

def pytest_configure(config):
    config.addinivalue_line("markers", "tolerance(dtype, rtol=None, atol=None, normwise=None): test")
