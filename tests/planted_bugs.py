"""Plant each one-line bug of issue 38 §10, run the given tests, say whether they caught it, revert.

Usage: python tests/planted_bugs.py [name ...] -- tests/x/test_y.py ... (no names: every plant).
A plant whose original line moved or changed is reported and skipped (update its strings). The
file is restored after each run, even when the tests fail or time out; never run two at once.
"""
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
PLANTS = {
 "traj_prefix": ("verifier/trajectory.py", "return os.path.commonpath([real, real_root]) == real_root", "return real.startswith(real_root)"),
 "media_prefix": ("serving/reward_service/core.py", "if not full.is_relative_to(root):", "if not str(full).startswith(str(root)):"),
 "pickle_allow": ("verifier/loaders/_safe_pickle.py", "if (module, name) in _BUILTINS:", "if module in (\"builtins\", \"collections\"):"),
 "pickle_gzip": ("verifier/loaders/_safe_pickle.py", "raw = gz.read(MAX_PICKLE_BYTES + 1)", "raw = gz.read()"),
 "fence_split": ("verifier/fencing.py", "defuse(text).splitlines()", "defuse(text).split(\"\\n\")"),
 "fence_secret": ("verifier/fencing.py", "_SECRET = os.environ.get(\"CUA_FENCE_SECRET\", \"\").encode() or secrets.token_bytes(32)", "_SECRET = os.environ.get(\"CUA_FENCE_SECRET\", \"\").encode()"),
 "penalty_all": ("verifier/pipeline.py", "total_max = sum(c.max_points for c in rb.criteria if applies[c.id])", "total_max = sum(c.max_points for c in rb.criteria)"),
 "budget_last": ("verifier/budget.py", "while len(parts.images) > 1 and now > limit:", "while parts.images and now > limit:"),
 "session_shield": ("verifier/session.py", "asyncio.wait_for(asyncio.shield(fut), _remaining(deadline))", "asyncio.wait_for(fut, _remaining(deadline))"),
 "breaker_window": ("verifier/judge/breaker.py", "self._recent.clear()  # the judge is back", "pass  # the judge is back"),
 "ladder_cap": ("verifier/judge/ladder.py", "delay = min(asked, cfg.retry_after_max_s)", "delay = asked"),
 "ladder_deadline": ("verifier/judge/ladder.py", "return delay if left is None else max(0.0, min(delay, left))", "return delay"),
 "batch_queue": ("serving/reward_service/app.py", "if len(body.trajectories) > min(config.max_batch, config.queue_size):", "if len(body.trajectories) > config.max_batch:"),
 "chunked_total": ("serving/reward_service/app.py", "size += len(chunk)", "size = len(chunk)"),
 "metrics_key": ("serving/reward_service/app.py", "OPEN_PATHS = frozenset({\"/health\", \"/ready\"})", "OPEN_PATHS = frozenset({\"/health\", \"/ready\", \"/metrics\"})"),
 "slot_finally": ("serving/reward_service/core.py", "            if not handed_over:\n                self.queue.release(1)", "            if not handed_over:\n                pass"),
 "slot_callback": ("serving/reward_service/core.py", "(self.tasks.discard(t), self.queue.release(1, started=started),", "(self.tasks.discard(t), None,"),
 "outage_store": ("serving/reward_service/core.py", "if not isinstance(outcome.error, JudgeUnavailableError):", "if True:"),
 "circuit_503": ("serving/reward_service/core.py", "    if isinstance(error, JudgeUnavailableError):  # circuit open included: come back later\n        return 503", "    if isinstance(error, JudgeUnavailableError):  # circuit open included: come back later\n        return 502"),
 "circuit_retry_after": ("serving/reward_service/core.py", "retry_after = max(1, math.ceil(err.retry_in_s))", "retry_after = OUTAGE_RETRY_AFTER_S"),
}


def main(argv: list[str]) -> int:
    sep = argv.index("--")
    names, tests = argv[:sep] or list(PLANTS), argv[sep + 1:]
    missed = 0
    for name in names:
        rel, old, new = PLANTS[name]
        path = REPO / rel
        src = path.read_text()
        if src.count(old) != 1:
            print(f"{name:20s} SKIPPED  the original line is not in {rel} exactly once: update this plant", flush=True)
            continue
        path.write_text(src.replace(old, new))
        try:
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *tests],
                               cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
        finally:
            path.write_text(src)
        lines = r.stdout.strip().splitlines()
        failed = [line for line in lines if line.startswith("FAILED")][:1]
        missed += r.returncode == 0
        print(f"{name:20s} {'CAUGHT' if r.returncode else 'MISSED'}  {lines[-1] if lines else '?'}  {failed}",
              flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
