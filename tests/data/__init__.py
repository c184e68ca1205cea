"""Test data shared by several test modules: stored documents and rows of older versions."""
