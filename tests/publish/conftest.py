import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "reward"))  # reward_fakes

import reward_fakes


@pytest.fixture(autouse=True)
def _fresh():
    from reward import clear_sessions

    clear_sessions()
    reward_fakes.CALLS.clear()
    reward_fakes.FAIL_TASKS.clear()
    yield
    clear_sessions()


class LocalHub:
    """The hub's repo storage as a local folder: what `Dataset.push_to_hub` and our card commit
    talk to, with no network. Only the storage is stood in for; `datasets`' and `huggingface_hub`'s
    own code (sharding, embedding, file naming, deletions, card `configs`) runs as it does for real.

    `HfApi.repo_info/create_repo/preupload_lfs_files/create_commit` and `HfFileSystem` are replaced;
    a commit applies its additions and deletions to `root/<repo>/` and moves the repo's revision,
    and a commit whose `parent_commit` is not the current revision is refused, as the hub does.
    """

    def __init__(self, root):
        self.root = root
        self.revs: dict[str, int] = {}
        self.staged: dict[str, bytes] = {}
        self.commits: list[dict] = []

    def sha(self, repo: str) -> str:
        return f"{self.revs[repo]:040x}"

    def install(self, monkeypatch) -> None:
        import datasets.arrow_dataset
        import httpx
        import huggingface_hub
        from huggingface_hub import CommitInfo, CommitOperationAdd, CommitOperationDelete
        from huggingface_hub.errors import RepositoryNotFoundError

        hub = self

        def repo_info(api, repo_id, *, repo_type=None, revision=None, **kw):
            if repo_id not in hub.revs:
                url = f"https://hub.local/api/datasets/{repo_id}"
                raise RepositoryNotFoundError(f"{repo_id} not found",
                                              response=httpx.Response(404, request=httpx.Request("GET", url)))
            return SimpleNamespace(id=repo_id, sha=hub.sha(repo_id))

        def create_repo(api, repo_id, *, repo_type=None, private=None, exist_ok=False, **kw):
            assert repo_type == "dataset"
            hub.revs.setdefault(repo_id, 0)
            (hub.root / repo_id).mkdir(parents=True, exist_ok=True)
            hub.commits.append({"create_repo": repo_id, "private": private})
            return SimpleNamespace(repo_id=repo_id)

        def preupload_lfs_files(api, repo_id, additions, **kw):
            for op in additions:  # the caller deletes its temporary file right after this call
                hub.staged[op.path_in_repo] = Path(op.path_or_fileobj).read_bytes()

        def create_commit(api, repo_id, operations, *, commit_message, parent_commit=None, **kw):
            if parent_commit is not None and parent_commit != hub.sha(repo_id):
                raise RuntimeError("412 precondition failed: parent_commit is not the head")
            repo = hub.root / repo_id
            for op in operations:
                path = repo / op.path_in_repo
                if isinstance(op, CommitOperationAdd):
                    src = op.path_or_fileobj
                    data = hub.staged.pop(op.path_in_repo, None)
                    if data is None:
                        data = src if isinstance(src, bytes) else Path(src).read_bytes() \
                            if isinstance(src, (str, Path)) else src.read()
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)
                elif isinstance(op, CommitOperationDelete):
                    path.unlink()
            hub.revs[repo_id] += 1
            hub.commits.append({"repo": repo_id, "message": commit_message,
                                "paths": sorted(o.path_in_repo for o in operations)})
            return CommitInfo(commit_url=f"https://huggingface.co/datasets/{repo_id}/commit/{hub.sha(repo_id)}",  # never fetched
                              commit_message=commit_message, commit_description="", oid=hub.sha(repo_id))

        class HubFS:
            """`hf://datasets/<repo>@<rev>/...` paths read from the repo folder (only the head)."""

            async_impl = asynchronous = False
            sep = "/"

            def __init__(self, *a, **kw):
                pass

            def _strip_protocol(self, path):
                return path

            def _local(self, path):
                m = re.fullmatch(r"datasets/([^/@]+/[^/@]+)(?:@([^/]+))?/?(.*)", path)
                assert m and (m[2] is None or m[2] == hub.sha(m[1])), path
                return hub.root / m[1], m[3]

            def glob(self, path, detail=False, **kw):
                repo, pattern = self._local(path)
                prefix = path[: len(path) - len(pattern)]
                found = {prefix + p.relative_to(repo).as_posix(): {"size": p.stat().st_size, "type": "file"}
                         for p in sorted(repo.glob(pattern)) if p.is_file()}
                return found if detail else list(found)

            def open(self, path, mode="rb", **kw):
                repo, rel = self._local(path)
                return open(repo / rel, mode, **{k: v for k, v in kw.items() if k in ("encoding", "newline")})

            def read_text(self, path, encoding=None, newline=None, **kw):
                with self.open(path, "r", encoding=encoding, newline=newline) as fh:
                    return fh.read()

        for name, fn in [("repo_info", repo_info), ("create_repo", create_repo),
                         ("preupload_lfs_files", preupload_lfs_files), ("create_commit", create_commit)]:
            monkeypatch.setattr(huggingface_hub.HfApi, name, fn)
        monkeypatch.setattr(huggingface_hub, "HfFileSystem", HubFS)
        monkeypatch.setattr(datasets.arrow_dataset, "HfFileSystem", HubFS)


@pytest.fixture
def local_hub(tmp_path, monkeypatch):
    hub = LocalHub(tmp_path / "hub")
    hub.install(monkeypatch)
    return hub
