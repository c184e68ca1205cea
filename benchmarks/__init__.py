"""Benchmarks of acti_store against a hand-written sqlite3 store and the original JSON-file design.

Entry point: ``python -m benchmarks.run`` (see ``benchmarks/README.md``).
"""
