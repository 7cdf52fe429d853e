"""Benchmark harness of the reward service, kept out of the service package (issue 38 §9).

Beside `verifier/perf` (the judge client's harness), one layer up because it drives the service
itself: `loadtest` (the loopback judge with injected latency and faults, and a load through the
TRL client, for tests/service/test_load.py and recipes/benchmark_service.py), `realload` (the
service's memory and CPU under real screenshots, watched from outside), `bounds` (what bounded a
load, read from the service's /metrics). The service never imports it (import-linter contract
`service-imports-no-harness`).
"""
