"""Benchmark harness: agreement of verifiers with human labels (CUAVerifierBench)."""
