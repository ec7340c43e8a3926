"""Benchmarks: `make bench` (see bench/README.md)."""
