"""The scored dataset: the source's rows, as they were, next to their results; written and pushed.

Why it is built this way:
- The input columns are kept by joining at the Arrow level: the source is opened with `datasets`
  again (memory-mapped, nothing decoded), the rows that have a record are selected, and the result
  columns are concatenated beside them. Screenshots stay `datasets.Image` features holding the
  original bytes: no PIL decode, no re-encode, byte-identical to the input (images stored only as
  paths are embedded as their file bytes, as `datasets`' own `push_to_hub` does).
- Rows are matched to records by the id `score-dataset` gave them (the same `iter_rows` code, run
  over the id columns only), so resuming, `--limit` and `--shard` need nothing special: a row is
  published when the log holds a record for it, with that id's latest record.
- The hub is reached through the library's own API only: `Dataset.push_to_hub` writes the parquet
  files (embedding path-only images), replaces the split's old files and records `configs` and
  `dataset_info` in the card; our `DatasetCard` facts (license, provenance) are then laid over it.
- `--publish-dir` lays the folder out the same way (`data/<split>-NNNNN-of-NNNNN.parquet`, a card
  with `configs`), so `load_dataset(DIR)` reads it and one shared folder can take N shard runs.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..records import FLAT_FIELDS, ScoreRecord, result_field, summarize
from .card import card_body, card_metadata, make_card, split_configs

MAX_SHARD_BYTES = 500 << 20  # the hub's default shard size
PREFIX = "uv_"


class PublishError(ConfigError):
    """The scored dataset could not be written or pushed (the scores themselves are safe in --out)."""


def _result_features() -> Any:
    import datasets

    v = datasets.Value
    return datasets.Features({
        "uv_id": v("string"), "uv_status": v("string"), "uv_reason": v("string"),
        "uv_task_id": v("string"), "uv_process_score": v("float64"), "uv_process_success": v("bool"),
        "uv_outcome_success": v("bool"), "uv_outcome_reasoning": v("string"),
        "uv_first_failure_step": v("int64"), "uv_result_json": v("string")})


def result_columns(records: list[ScoreRecord]) -> dict[str, list[Any]]:
    """One `uv_*` column per flat result field, in `records` order (empty for unscored rows)."""
    cols: dict[str, list[Any]] = {name: [] for name in _result_features()}
    for rec in records:
        res = rec.result_dict()
        cols["uv_id"].append(rec.id)
        cols["uv_status"].append(rec.status)
        cols["uv_reason"].append(rec.reason)
        for name in FLAT_FIELDS:
            cols[PREFIX + name].append(result_field(res, name))
        cols["uv_first_failure_step"].append(result_field(res, "diagnosis.first_failure_step"))
        cols["uv_result_json"].append(json.dumps(res, ensure_ascii=False) if res is not None else None)
    return cols


def _row_ids(src: Any, args: argparse.Namespace) -> list[str]:
    """The id `score-dataset` gave each row of `src`, computed from the id columns only."""
    from ..sources.rows import ID_COLUMNS, iter_rows

    wanted = [args.id_column] if args.id_column else list(ID_COLUMNS)
    cols = [c for c in wanted if c in src.column_names]
    rows = src.select_columns(cols).to_list() if cols else [{} for _ in range(len(src))]
    return [rid for rid, _, _ in iter_rows(rows, args.source, args.id_column)]


def build(args: argparse.Namespace, records: list[ScoreRecord]) -> tuple[Any, list[str], list[ScoreRecord]]:
    """(scored Dataset, input columns kept, the records published in row order)."""
    import datasets

    from ..sources.rows import is_run_source, load_rows

    if is_run_source(Path(args.source)):  # trajectories on disk have no input columns to keep: the results alone
        return datasets.Dataset.from_dict(result_columns(records), features=_result_features()), [], records
    # Never streamed and never decoded: the source is memory-mapped and joined at the Arrow level.
    src = load_rows(args.source, split=args.split, name=args.name, streaming=False, undecoded=False)
    by_id = {rec.id: rec for rec in records}
    ids = _row_ids(src, args)
    keep = [i for i, rid in enumerate(ids) if rid in by_id]
    kept = [by_id[ids[i]] for i in keep]
    clash = [c for c in src.column_names if c.startswith(PREFIX) and c in _result_features()]
    if clash:
        raise PublishError(f"the source already has result column(s) {', '.join(clash)}")
    rows = src if keep == list(range(len(src))) else src.select(keep)
    results = datasets.Dataset.from_dict(result_columns(kept), features=_result_features())
    return datasets.concatenate_datasets([rows, results], axis=1), list(src.column_names), kept


def _embedded(shard: Any) -> Any:
    """Images stored as paths become their bytes (no decode); stored bytes pass through unchanged."""
    from datasets.features.features import require_storage_embed
    from datasets.table import embed_table_storage

    if not any(require_storage_embed(f) for f in shard.features.values()):
        return shard

    return shard.with_format("arrow").map(embed_table_storage, batched=True, keep_in_memory=True) \
        .with_format(None)


def file_names(split: str, parts: int, shard: tuple[int, int] | None) -> tuple[list[str], str]:
    """(parquet file names, the glob of the files this run owns and replaces).

    Unsharded: the hub's `<split>-NNNNN-of-NNNNN.parquet`, owning the whole split. With `--shard
    I/N` the run owns `<split>-I-of-N*` only (a part suffix when it needs several files), so N shard
    processes publishing to one folder each replace their own files and never each other's;
    both forms match the pattern `datasets` and the hub read splits by.
    """
    if shard is None:
        names = [f"{split}-{j:05d}-of-{parts:05d}.parquet" for j in range(parts)]
        return names, f"{split}-[0-9][0-9][0-9][0-9][0-9]-of-*.parquet"
    stem = f"{split}-{shard[0]:05d}-of-{shard[1]:05d}"
    names = [f"{stem}.parquet"] if parts == 1 else [f"{stem}-{j:05d}.parquet" for j in range(parts)]
    return names, f"{stem}*.parquet"


def write_folder(ds: Any, folder: Path, split: str, meta: dict[str, Any], body: str,
                 shard: tuple[int, int] | None = None) -> list[Path]:
    """`ds` as `data/*.parquet` files plus a README.md card (this run's stale files removed first).
    The card's `configs` names every split whose files the folder holds, so several runs can fill it."""
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    parts = max(1, math.ceil(ds.data.nbytes / MAX_SHARD_BYTES))
    names, owned = file_names(split, parts, shard)
    for old in data.glob(owned):
        old.unlink()
    paths = []
    for j, name in enumerate(names):
        _embedded(ds.shard(num_shards=parts, index=j, contiguous=True)).to_parquet(str(data / name))
        paths.append(data / name)
    splits = {f.name.split("-", 1)[0] for f in data.glob("*-*.parquet")}  # split names hold no "-"
    card = make_card({**meta, "configs": split_configs(splits)}, body)
    (folder / "README.md").write_text(str(card), encoding="utf-8")
    return paths


def check_publish_args(args: argparse.Namespace) -> None:
    """Refused before any scoring: `Dataset.push_to_hub` replaces every file of the split it pushes,
    so N `--shard I/N` processes pushing one split to one repo would each erase the others' rows."""
    if getattr(args, "push_to_hub", None) and getattr(args, "shard", None):
        raise PublishError(
            "--push-to-hub cannot be combined with --shard: each shard's push would replace the other "
            "shards' files of the split. Publish every shard with --publish-dir into one shared folder "
            "(each shard owns its own files there) and upload that folder once "
            "(`huggingface-cli upload REPO DIR --repo-type dataset`)")


def push(ds: Any, repo: str, split: str, meta: dict[str, Any], body: str, *, private: bool = False) -> str:
    """`ds` pushed as split `split` of dataset repo `repo` by `Dataset.push_to_hub` (repo created if
    missing, the split's old files replaced, `configs` and `dataset_info` written into the card),
    then our card laid over the README it wrote, committed on top of that very commit."""
    from huggingface_hub import HfApi, HfFileSystem

    try:  # token from $HF_TOKEN or `huggingface-cli login`
        info = ds.push_to_hub(repo, split=split, private=private, max_shard_size=MAX_SHARD_BYTES,
                              commit_message="cua-verifier score-dataset: scored rollouts")
        try:
            base = HfFileSystem().read_text(f"datasets/{repo}@{info.oid}/README.md", encoding="utf-8")
        except FileNotFoundError:
            base = None
        card = make_card(meta, body, base)
        HfApi().upload_file(path_or_fileobj=str(card).encode(), path_in_repo="README.md", repo_id=repo,
                            repo_type="dataset", parent_commit=info.oid,
                            commit_message="cua-verifier score-dataset: dataset card")
    except Exception as exc:  # any hub failure: HTTP/transport errors (httpx's are no OSError), no token, bad id
        raise PublishError(f"cannot push to hub dataset {repo!r}: {type(exc).__name__}: {exc} "
                           "(the scores are saved; rerun the same command to retry the push)") from exc
    return str(info.commit_url)


def publish(args: argparse.Namespace, settings: Any, records: list[ScoreRecord]) -> dict[str, Any]:
    """Build the scored dataset, write it to --publish-dir, push it with `push_to_hub` if asked."""
    import datasets

    if getattr(args, "no_progress", False):
        datasets.disable_progress_bars()
    from ..distributed.shard import parse_shard

    check_publish_args(args)
    shard = parse_shard(args.shard) if getattr(args, "shard", None) else None
    ds, inputs, kept = build(args, records)
    summary = summarize(kept)
    # a local source is named by its file name only: the card must not publish the user's paths
    source = Path(args.source).name if Path(args.source).exists() else args.source
    license = getattr(args, "license", None) or getattr(ds.info, "license", None) or "unknown"
    meta = card_metadata(source=source, split=args.split, shard=getattr(args, "shard", None), summary=summary,
                         records=kept, settings=settings, columns=list(ds.column_names), license=license)
    body = card_body(meta, input_columns=inputs)
    report: dict[str, Any] = {"rows": len(ds), "columns": list(ds.column_names)}
    if args.publish_dir:
        folder = Path(args.publish_dir)
        try:
            report["files"] = [str(p) for p in write_folder(ds, folder, args.split, meta, body, shard)]
        except OSError as exc:
            raise PublishError(f"cannot write the scored dataset to {folder}: {exc}") from exc
        report["folder"] = str(folder)
    if args.push_to_hub:
        report["pushed"] = push(ds, args.push_to_hub, args.split, meta, body, private=args.private)
    return report
