"""Benchmark harness behind `memora eval`; data stays in ../shared/bench."""
