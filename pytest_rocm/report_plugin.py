"""Report hooks (scaffold)."""
