"""The one input type of the verifier: a `Trajectory` (task, steps, screenshots, final answer).

Every on-disk format is converted to this model by a loader in `verifier.loaders`; the native
JSON form (`Trajectory.model_dump_json()`) round-trips exactly.

Conventions (fixed here so no stage has to guess):
- Steps are numbered from 1 (`Step.index`), in execution order.
- Screenshots are numbered from 1 by their position in `Trajectory.screenshots` ("Screenshot k of M").
- `Screenshot.step` names the step a screenshot belongs to and `Screenshot.timing` says whether it
  shows the page *before* that step's action ran or *after* it. `step=0, timing="after"` is the
  initial page before any action.
- The final page (after the last action) is `step=n, timing="after"`; with no steps at all the
  only page is `step=0, timing="after"`. Loaders map every format onto this (see
  `verifier.loaders` and examples/README.md for the per-format rules).
- `final_answer is None` means the agent never answered; an empty string is an (empty) answer.
- `load_warnings` lists what a loader had to tolerate (e.g. screenshot count != step count). It
  lives on the trajectory, not in `Task.metadata`, because the task is what the rubric sees.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import io
import os
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from PIL import Image
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_serializer,
    model_validator,
)

from .coordinates import ScreenFrame
from .errors import ScreenshotError
from .other_verdicts import AGENT_CLAIM, ENV_SCORE, FRAMEWORK_JUDGE, AgentClaim, EnvScore, FrameworkJudgement

try:  # optional (the service extra): SIMD base64, ~20x the standard library's speed on screenshots
    import pybase64 as _fast_b64
except ImportError:  # pragma: no cover - exercised only without the extra
    _fast_b64 = None  # type: ignore[assignment]

TRAJECTORY_SCHEMA_VERSION = "1.0"

#: Guards against decompression bombs and absurd inputs (overridable per call).
MAX_SCREENSHOT_BYTES = 40 * 1024 * 1024
MAX_SCREENSHOT_PIXELS = 40_000_000


_MAGIC = [(b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
          (b"GIF8", "image/gif"), (b"RIFF", "image/webp"), (b"BM", "image/bmp")]


def path_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether `path`, symlinks resolved, is `root` or lies under it (`root` resolved too)."""
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, real_root]) == real_root


def b64decode_checked(payload: str) -> bytes:
    """Base64 text -> bytes, refusing any character outside the alphabet (``binascii.Error``,
    ``ValueError`` for non-ASCII text), as ``base64.b64decode(payload, validate=True)``.

    Why: decoding the data URLs was the largest CPU cost of a reward service (a 1440x900 capture
    is ~1 MB of base64: ~4 ms in the standard library, ~0.2 ms in pybase64). pybase64 is stricter
    only on excess padding; whatever it refuses is decided by the standard library, so the set of
    accepted texts and their bytes are exactly the standard library's.
    """
    if _fast_b64 is not None:
        try:
            return _fast_b64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            pass
    return base64.b64decode(payload, validate=True)


def _text_as_given(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """A string is kept as the very object given: pydantic would copy a `str` subclass into a plain
    `str`, a megabyte per data URL, and lose what the subclass says (the reward service's body
    parser hands over `verifier.judge.jsonbody.JsonSafe` texts, which go to the judge unescaped)."""
    return value if isinstance(value, str) else handler(value)


def sniff_mime(data: bytes) -> str | None:
    """MIME type from the first bytes (no decoding); None when it is no image format we know."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    return None


class KnownImage(NamedTuple):
    """What reading a screenshot's decoded bytes established (`Screenshot.known`): its content
    hash, sniffed format and header size. Whoever already decoded a data URL hands these to the
    screenshot that carries it (`Screenshot.know`), so its bytes are not decoded a second time."""

    sha256: str
    mime: str | None
    size: tuple[int, int]


class RunStatus(str, Enum):
    """How the agent's run ended."""

    finished = "finished"  # the agent stopped on its own (with or without an answer)
    step_budget_exhausted = "step_budget_exhausted"
    aborted = "aborted"  # crashed / killed by the harness


class Task(BaseModel):
    """What the user asked for. Only this is shown to the rubric generator."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    instruction: str = Field(min_length=1)
    start_url: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class Step(BaseModel):
    """One agent action. The agent's reasoning is kept apart from the tool arguments."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=1)
    action: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought: str | None = None
    url: str | None = None
    timestamp: float | None = None
    error: str | None = None
    #: the arguments in the screenshots' pixels when the agent pointed on another image (a policy
    #: shown thumbnails): `verifier.coordinates` says why both are kept
    screen: ScreenFrame | None = None

    @model_serializer(mode="wrap")
    def _serialise(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)  # no `screen` key when there is none: other steps' JSON (and keys) unchanged
        if self.screen is None:
            out.pop("screen", None)
        return out


class Screenshot(BaseModel):
    """A lazily loaded screenshot.

    Exactly one source is kept: a file `path`, a `data_url`, or in-memory bytes / a PIL image
    (private; serialised as a PNG data URL). Nothing is decoded until `bytes()` / `image()` is
    called, so a 500-step trajectory costs nothing until a stage needs its pixels.
    """

    model_config = ConfigDict(extra="forbid")

    step: int = Field(ge=0, description="Step this screenshot belongs to (0 = initial page).")
    timing: Literal["before", "after"] = "before"
    path: str | None = None
    data_url: Annotated[str | None, WrapValidator(_text_as_given)] = None

    _raw: bytes | None = PrivateAttr(default=None)
    _pil: Image.Image | None = PrivateAttr(default=None)
    _sha: str | None = PrivateAttr(default=None)
    _root: str | None = PrivateAttr(default=None)  # folder a path source must stay in (see confine_to)
    _size: tuple[int, int] | None = PrivateAttr(default=None)  # header facts, kept by `drop_bytes`
    _mime: str | None = PrivateAttr(default=None)

    # ---- constructors -------------------------------------------------------------------------
    @classmethod
    def from_path(cls, path: str | Path, *, step: int, timing: str = "before") -> Screenshot:
        return cls(step=step, timing=timing, path=str(path))

    @classmethod
    def from_bytes(cls, data: bytes, *, step: int, timing: str = "before") -> Screenshot:
        shot = cls(step=step, timing=timing)
        shot._raw = bytes(data)
        return shot

    @classmethod
    def from_data_url(cls, url: str, *, step: int, timing: str = "before") -> Screenshot:
        return cls(step=step, timing=timing, data_url=url)

    @classmethod
    def from_image(cls, image: Image.Image, *, step: int, timing: str = "before") -> Screenshot:
        shot = cls(step=step, timing=timing)
        shot._pil = image
        return shot

    @field_validator("path")
    @classmethod
    def _no_nul(cls, path: str | None) -> str | None:
        # the OS refuses such a name with a ValueError, which no caller expects from a path
        if path is not None and "\x00" in path:
            raise ValueError("a screenshot path must not contain a NUL byte")
        return path

    @model_validator(mode="after")
    def _one_serialisable_source(self) -> Screenshot:
        if self.path is not None and self.data_url is not None:
            raise ValueError("a screenshot has either 'path' or 'data_url', not both")
        return self

    def confine_to(self, root: str | os.PathLike[str]) -> None:
        """Check again, right before the file is read, that the path still leads inside `root`.

        The loaders check at load time; this closes the gap until the bytes are read (a file of the
        folder swapped for a symlink after loading).
        """
        self._root = os.fspath(root)

    # ---- access -------------------------------------------------------------------------------
    def describe(self) -> str:
        """Where this screenshot comes from, for error messages."""
        if self.path:
            return self.path
        if self.data_url:
            return f"data URL ({len(self.data_url)} chars)"
        return "in-memory image"

    def bytes(self, *, max_bytes: int = MAX_SCREENSHOT_BYTES) -> bytes:
        """The encoded image bytes (PNG/JPEG/...), read once and kept."""
        if self._raw is None:
            self._raw = self._read_raw(max_bytes)
        return self._raw

    def _check_file(self, max_bytes: int) -> Path:
        """Existence and size guard for a path source, before any byte is read."""
        p = Path(self.path or "")
        if self._root is not None and not path_inside(p, self._root):
            raise ScreenshotError(f"screenshot path now leads outside the trajectory folder {self._root} "
                                  f"(to {os.path.realpath(p)})", file=self.path)
        try:
            size = p.stat().st_size
        except OSError as exc:
            raise ScreenshotError(f"screenshot file missing ({exc.strerror})", file=self.path) from exc
        if not p.is_file():
            raise ScreenshotError("screenshot path is not a file", file=self.path)
        if size > max_bytes:
            raise ScreenshotError(f"screenshot is {size} bytes, over the {max_bytes}-byte limit",
                                  file=self.path)
        return p

    def _read_raw(self, max_bytes: int) -> bytes:
        if self.path is not None:
            p = self._check_file(max_bytes)
            try:
                return p.read_bytes()
            except OSError as exc:
                raise ScreenshotError(f"cannot read screenshot ({exc.strerror or exc})",
                                      file=self.path) from exc
        if self.data_url is not None:
            head, _, payload = self.data_url.partition(",")
            if not head.startswith("data:") or ";base64" not in head:
                raise ScreenshotError("not a base64 data URL", field="data_url")
            if len(payload) * 3 // 4 > max_bytes:
                raise ScreenshotError(f"data URL over the {max_bytes}-byte limit", field="data_url")
            try:
                return b64decode_checked(payload)
            except (binascii.Error, ValueError) as exc:
                raise ScreenshotError(f"invalid base64 in data URL: {exc}", field="data_url") from exc
        if self._pil is not None:
            buf = io.BytesIO()
            self._pil.save(buf, format="PNG")
            return buf.getvalue()
        raise ScreenshotError("screenshot has no source (path, data URL, bytes or image)")

    def mime(self) -> str | None:
        """The image format sniffed from the bytes' magic number (kept, like the hash)."""
        if self._mime is None:
            self._mime = sniff_mime(self.bytes())
        return self._mime

    def drop_bytes(self) -> None:
        """Forget the decoded bytes of a `data_url` source once its hash, size and format are known.

        Why: a service holding many requests would otherwise keep every image twice (the base64
        text and its decoded bytes). The facts a pass-through judge request needs stay; `bytes()`
        decodes the data URL again if anything still asks for them (a resize).
        """
        if self.data_url is not None and self._raw is not None:
            self.known()  # computed and kept before the bytes go
            self._raw = None

    def known(self) -> KnownImage:
        """Hash, format and header size (read from the bytes once; `ScreenshotError` as `size`)."""
        return KnownImage(self.sha256, self.mime(), self.size())

    def know(self, facts: KnownImage) -> None:
        """Take `facts` established from exactly this screenshot's bytes (by the caller's word: the
        reward service decodes each inline data URL while parsing the request body). The pixel
        guard still applies: `size` checks the known size against its limit on every call."""
        self._sha, self._mime, self._size = facts

    def same_data_url(self, other: Screenshot) -> bool:
        """Whether both carry a data URL of exactly the same text (a page that did not change)."""
        return self.data_url is not None and self.data_url == other.data_url

    def adopt(self, twin: Screenshot) -> None:
        """Take the decoded bytes and facts of `twin`, whose data URL is this one's text
        (`same_data_url`): the same text decodes to the same bytes, hash, format and size, so a
        repeated screenshot is neither decoded nor hashed again, and its text is held once."""
        if not self.same_data_url(twin):
            raise ValueError("adopt needs a screenshot with the same data URL text")
        self.data_url, self._raw = twin.data_url, twin._raw
        self._sha, self._mime, self._size = twin.sha256, twin.mime(), twin._size

    @property
    def sha256(self) -> str:
        """Content hash of the encoded bytes: the key for caching and de-duplication."""
        if self._sha is None:
            self._sha = hashlib.sha256(self.bytes()).hexdigest()
        return self._sha

    @property
    def known_sha256(self) -> str | None:
        """`sha256` if already computed, else None (never reads or hashes anything)."""
        return self._sha

    def image(self, *, max_pixels: int = MAX_SCREENSHOT_PIXELS) -> Image.Image:
        """Decode, with a pixel-count guard checked *before* the full decode.

        Encoded sources are decoded on every call and the pixels are not kept: a 100-step run of
        full-HD screenshots would otherwise hold ~0.6 GB of pixels per trajectory in a GRPO batch. The encoded
        bytes are kept, and the judge client encodes once per content hash.
        """
        if self._pil is not None:
            self._check_pixels(*self._pil.size, max_pixels)
            return self._pil
        data = self.bytes()
        try:
            img = Image.open(io.BytesIO(data))
            self._check_pixels(*img.size, max_pixels)
            img.load()
        except ScreenshotError:
            raise
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise ScreenshotError(f"cannot decode screenshot: {exc}", file=self.path) from exc
        return img

    def held_image(self) -> Image.Image | None:
        """The in-memory image this screenshot was made from (already decoded), if any."""
        return self._pil

    def _check_pixels(self, w: int, h: int, max_pixels: int) -> None:
        if w * h > max_pixels:
            raise ScreenshotError(f"image is {w}x{h}, over the {max_pixels}-pixel limit",
                                  file=self.path)

    def size(self, *, max_pixels: int = MAX_SCREENSHOT_PIXELS) -> tuple[int, int]:
        """(width, height) from the image header only: cheap, no pixel decode.

        Also the loaders' load-time check: it fails with `ScreenshotError` on a missing file, a
        file that is no image, or an oversize image, without paying for a full decode.
        """
        if self._pil is not None:
            self._check_pixels(*self._pil.size, max_pixels)
            return self._pil.size
        if self._size is not None:
            self._check_pixels(*self._size, max_pixels)
            return self._size
        if self._raw is None and self.path is not None:
            # Header read only: a 500-step run must not read every byte at load time.
            source: Any = self._check_file(MAX_SCREENSHOT_BYTES)
        else:
            source = io.BytesIO(self.bytes())
        try:
            with Image.open(source) as img:
                w, h = img.size
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise ScreenshotError(f"not a readable image: {exc}", file=self.path) from exc
        self._check_pixels(w, h, max_pixels)
        if self.path is None:  # a file may change under its path; inline bytes cannot
            self._size = (w, h)
        return w, h

    def validate_image(self) -> None:
        """Raise `ScreenshotError` now if the image is missing or undecodable (loaders call this)."""
        self.image()

    def to_serialisable(self) -> Screenshot:
        """A copy that survives JSON: in-memory sources become a PNG/original-bytes data URL."""
        if self.path is not None or self.data_url is not None:
            return self
        return Screenshot(step=self.step, timing=self.timing, data_url=self.as_data_url())

    def as_data_url(self) -> str:
        """The original encoded bytes as a data URL (a `data_url` source is returned as is)."""
        if self.data_url is not None:
            return self.data_url
        data = self.bytes()
        mime = sniff_mime(data) or "application/octet-stream"
        return f"data:{mime};base64,{base64.b64encode(data).decode()}"

    @model_serializer(mode="wrap")
    def _serialise(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # In-memory sources would otherwise vanish from JSON: embed them as a data URL so every
        # dump (model_dump_json, to_json, nested in other models) round-trips.
        out = handler(self)
        if self.path is None and self.data_url is None and (self._raw is not None or self._pil is not None):
            out["data_url"] = self.as_data_url()
        return out


class Trajectory(BaseModel):
    """A whole agent run: the verifier's single input type."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = TRAJECTORY_SCHEMA_VERSION
    task: Task
    steps: list[Step] = Field(default_factory=list)
    screenshots: list[Screenshot] = Field(default_factory=list)
    final_answer: str | None = None
    status: RunStatus = RunStatus.finished
    source_format: str = "native"
    source_path: str | None = None
    load_warnings: list[str] = Field(default_factory=list)
    #: Facts about the run that are not the task (shown to no judge): `AGENT_CLAIM`, `ENV_SCORE` and
    #: `FRAMEWORK_JUDGE` (see `AgentClaim`, `EnvScore`, `FrameworkJudgement`); loaders may add other keys.
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _steps_numbered(self) -> Trajectory:
        for pos, step in enumerate(self.steps, start=1):
            if step.index != pos:
                raise ValueError(f"steps[{pos - 1}].index is {step.index}, expected {pos}")
        n = len(self.steps)
        for pos, shot in enumerate(self.screenshots):
            if shot.step > n + 1:
                raise ValueError(f"screenshots[{pos}].step is {shot.step}, but there are {n} steps")
        self.other_verdicts()  # a malformed agent_claim / env_score fails here, not in a report
        return self

    @property
    def answered(self) -> bool:
        return self.final_answer is not None

    def distinct_screenshots(self) -> dict[str, list[int]]:
        """Map content hash -> 1-based screenshot numbers sharing it (first occurrence first)."""
        groups: dict[str, list[int]] = {}
        for k, shot in enumerate(self.screenshots, start=1):
            groups.setdefault(shot.sha256, []).append(k)
        return groups

    def agent_claim(self) -> AgentClaim | None:
        raw = self.metadata.get(AGENT_CLAIM)
        return AgentClaim.model_validate(raw) if isinstance(raw, dict) else None

    def env_score(self) -> EnvScore | None:
        raw = self.metadata.get(ENV_SCORE)
        return EnvScore.model_validate(raw) if isinstance(raw, dict) else None

    def framework_judgement(self) -> FrameworkJudgement | None:
        raw = self.metadata.get(FRAMEWORK_JUDGE)
        return FrameworkJudgement.model_validate(raw) if isinstance(raw, dict) else None

    def other_verdicts(self) -> dict[str, Any]:
        """The agent's claim, the environment's score and the framework's own judge as plain data
        (absent ones left out)."""
        out: dict[str, Any] = {}
        for key, verdict in ((AGENT_CLAIM, self.agent_claim()), (ENV_SCORE, self.env_score()),
                             (FRAMEWORK_JUDGE, self.framework_judgement())):
            if verdict is not None:
                out[key] = verdict.model_dump()
        return out

    def to_json(self, **kwargs: Any) -> str:
        """Native JSON; in-memory screenshots are embedded as data URLs (by their serializer)."""
        return self.model_dump_json(**kwargs)
