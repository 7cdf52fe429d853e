"""What bounded a load on the reward service, read from the service's own /metrics.

Why: adding replicas costs a copy of Ray's request path per verification and a copy of the
service's caches per replica, and it helps only when one process is bound by its core. On this
project's benchmark (M = 20, a judge at 0.5 s per call) the default process was bound by its byte
budget instead, with two thirds of a core idle; raising the budget and the judge's connections
did more than a second replica (docs/scaling-serve.md, "What bounds one process"). An operator has
the same figures in Prometheus: `cua_reward_wait_seconds_total{bound}` (`verifier.waits`) and
`cua_reward_cpu_seconds_total`. `verdict` is the rule the benchmark prints, kept pure so that it
is tested on its own; `CpuShares` and `machine_load` say what the machine itself had left.
"""
from __future__ import annotations

import os
import time
from typing import Any

import psutil
from prometheus_client.parser import text_string_to_metric_families

BOUNDS = ("bytes", "slots", "judge")
#: A process that used this much of a core over the load is bound by it.
CPU_BOUND_CORES = 0.85
#: A bound is met when requests (bytes, slots) or judge calls (judge) spent at least this share of
#: their time waiting at it.
MIN_SHARE = 0.10
HINTS = {
    "cpu": "the process is bound by its core: add replicas (--replicas N) where cores are free",
    "bytes": "requests waited for the byte budget: raise --max-inflight-mb (peak memory rises with it)",
    "slots": "rollouts waited for a slot: raise --concurrency",
    "judge": "judge calls waited for a connection: raise the judge's max_concurrency "
             "(config judge.max_concurrency), if the judge server keeps up",
    "latency": "nothing waited and no core is full: the judge's latency sets the pace; more "
               "requests in flight raise the rate",
}
_NAMES = {"cua_reward_wait_seconds_total": "wait_s", "cua_reward_waits_total": "waits",
          "cua_reward_cpu_seconds_total": "cpu_s", "cua_reward_judge_seconds_total": "judge_s",
          "cua_reward_request_latency_seconds_sum": "request_s"}


def read(metrics_text: str) -> dict[str, float]:
    """From a /metrics text: `wait_s:<bound>`, `waits:<bound>`, `cpu_s`, `judge_s` (time in judge
    calls) and `request_s` (time of /v1/ requests, byte waits included); absent ones are 0."""
    out = {f"{kind}:{b}": 0.0 for kind in ("wait_s", "waits") for b in BOUNDS}
    out |= {"cpu_s": 0.0, "judge_s": 0.0, "request_s": 0.0}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            kind = _NAMES.get(sample.name)
            if kind in ("wait_s", "waits"):
                if sample.labels.get("bound") in BOUNDS:
                    out[f"{kind}:{sample.labels['bound']}"] += sample.value
            elif kind == "request_s":
                if sample.labels.get("endpoint", "").startswith("/v1/"):
                    out[kind] += sample.value
            elif kind is not None:
                out[kind] += sample.value
    return out


def verdict(before: dict[str, float], after: dict[str, float], *, scored: int, wall_s: float,
            processes: int = 1, cores: float | None = None) -> dict[str, Any]:
    """What set the pace of the load between two `read`s. `waiting_share`: of their time, the share
    requests spent waiting for bytes and for a slot, and judge calls for a connection. `bounds`:
    `cpu` when a process used >= `CPU_BOUND_CORES` of a core, then every bound with a share >=
    `MIN_SHARE` (largest first), else `latency`; `hints`: the setting to change for each. `cores`:
    the cores per process over the load when the caller measured them (the benchmark does, from
    /proc, over the load's window exactly); else the service's CPU counter over `wall_s`."""
    d = {k: after[k] - before[k] for k in after}
    time_of = {"bytes": d["request_s"], "slots": d["request_s"], "judge": d["judge_s"]}
    share = {b: round(d[f"wait_s:{b}"] / time_of[b], 3) if time_of[b] > 0 else 0.0 for b in BOUNDS}
    if cores is None:
        cores = d["cpu_s"] / max(wall_s, 1e-9) / max(1, processes)
    met = (["cpu"] if cores >= CPU_BOUND_CORES else []) + sorted(
        (b for b in BOUNDS if share[b] >= MIN_SHARE), key=lambda b: -share[b])
    met = met or ["latency"]
    n = max(1, scored)
    return {"waiting_share": share,
            "wait_s_per_verification": {b: round(d[f"wait_s:{b}"] / n, 3) for b in ("bytes", "slots")},
            "times_waited": {b: int(d[f"waits:{b}"]) for b in BOUNDS},
            "cores_per_process": round(cores, 2), "bounds": met, "hints": [HINTS[b] for b in met]}


def machine_load() -> str:
    """The 1/5/15-minute load averages and core count: every figure is stated with them."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


class CpuShares:
    """Where the machine's CPU went during a load, in cores (CPU seconds over wall seconds): the
    service, the benchmark's own client and loopback judge, and everything else. Why: on a small
    machine the harness competes with the service, and a throughput ratio (one process against N
    replicas) is bounded by the cores left idle, which this shows."""

    def __init__(self, *, judge: psutil.Process, client: psutil.Process) -> None:
        self.procs = {"judge": judge, "client": client}
        self.start = time.monotonic()
        self.own = {k: sum(p.cpu_times()[:2]) for k, p in self.procs.items()}
        self.machine = psutil.cpu_times()

    def cores(self, *, service_cpu: float) -> dict[str, float]:
        """Cores used (CPU seconds per wall second) by each part; "stolen" is time the hypervisor
        gave to other guests (a VM's noise), "idle" what was left."""
        wall = max(time.monotonic() - self.start, 1e-9)
        now, n = psutil.cpu_times(), psutil.cpu_count() or 1

        def delta(field: str) -> float:
            return getattr(now, field, 0.0) - getattr(self.machine, field, 0.0)

        # guest time is already inside user time: not counted twice
        total = sum(delta(f) for f in now._fields if f not in ("guest", "guest_nice"))
        if total <= 0:
            return {}
        idle, stolen = delta("idle") + delta("iowait"), delta("steal")
        busy = (total - idle - stolen) / total * n
        out = {"service": service_cpu / wall}
        out.update({k: (sum(p.cpu_times()[:2]) - self.own[k]) / wall for k, p in self.procs.items()})
        out["other"] = max(0.0, busy - sum(out.values()))
        out["stolen"] = stolen / total * n
        out["idle"] = idle / total * n
        return {k: round(v, 2) for k, v in out.items()}
