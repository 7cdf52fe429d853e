"""Optional on-disk cache of judge replies, so re-scoring the same inputs costs no judge calls.

The key is the sha256 of everything that determines the reply: model id, the messages (images as
their content hash plus the encoder settings, not their bytes), the output schema, the structured
output mode and the sampling parameters. Only deterministic calls are cached: temperature 0, or
an explicit seed. Caching a stochastic, unseeded call would make k majority votes identical on a
re-run; callers that vote at temperature > 0 should pass a distinct ``Sampling.seed`` per vote.

Storage is one SQLite file in WAL mode, safe across the processes of a multi-GPU TRL run. Only
replies that parsed and validated are stored.

Example::

    cache = ResponseCache("runs/judge-cache")
    hit = cache.get(key)          # CachedReply | None
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import Message, Sampling

CACHE_FILE = "judge_responses.sqlite3"


@dataclass(frozen=True)
class CachedReply:
    raw: str
    model: str


def cacheable(sampling: Sampling) -> bool:
    """A call is cached only when its reply is reproducible by construction."""
    return sampling.temperature == 0.0 or sampling.seed is not None


def cache_key(*, model: str, messages: list[Message], schema: dict[str, Any], mode: str,
              sampling: Sampling, image_settings: str) -> str:
    """sha256 over a canonical JSON of the request, with images replaced by their hashes."""
    msgs = []
    for msg in messages:
        parts: list[dict[str, Any]] = []
        for part in msg.content:
            if part.type == "text":
                parts.append({"text": part.text})
            else:
                parts.append({"image": part.screenshot.sha256, "label": part.label})
        msgs.append({"role": msg.role, "parts": parts})
    payload = {"v": 1, "model": model, "messages": msgs, "schema": schema, "mode": mode,
               "sampling": sampling.model_dump(mode="json"), "images": image_settings}
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """A tiny key -> (raw reply, model id) store in ``<cache_dir>/judge_responses.sqlite3``."""

    def __init__(self, cache_dir: str | Path) -> None:
        self.path = Path(cache_dir) / CACHE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False,
                                     isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, raw TEXT NOT NULL, "
                           "model TEXT NOT NULL, created REAL NOT NULL)")

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            row = self._conn.execute("SELECT raw, model FROM replies WHERE key = ?", (key,)).fetchone()
        return CachedReply(raw=row[0], model=row[1]) if row else None

    def put(self, key: str, raw: str, model: str) -> None:
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO replies (key, raw, model, created) VALUES (?, ?, ?, ?)",
                               (key, raw, model, time.time()))

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
