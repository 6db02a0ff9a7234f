"""End-to-end model suite (a package so its helper modules never collide with other suites')."""
