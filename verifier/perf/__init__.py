"""Performance measurement of the judge client over real HTTP (see ``recipes/benchmark_http.py``).

`figures` holds the pure arithmetic (critical path from request timestamps, prefix-repeat share,
client overhead, vLLM's prefix-cache counters), `latency_judge` a loopback judge with a fixed
latency that records every request, `shots` the screenshot sets, and `run` the orchestration.
"""
