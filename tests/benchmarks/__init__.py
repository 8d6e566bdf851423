"""Smoke tests of the benchmark harness (``python -m benchmarks``)."""
