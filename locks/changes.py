"""Print the pins that differ between two lock folders (run_all.sh --latest): one line per package,
`lock: name old -> new`, and a count. Reads only `name==version` lines."""
from __future__ import annotations

import sys
from pathlib import Path


def pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        name, sep, version = line.split(";")[0].strip().partition("==")
        if sep and not name.startswith("#"):
            out[name.lower().replace("_", "-")] = version.strip()
    return out


def main(old_dir: str, new_dir: str) -> int:
    changed = 0
    for new in sorted(Path(new_dir).glob("*.txt")):
        before, after = pins(Path(old_dir) / new.name), pins(new)
        for name in sorted(before.keys() | after.keys()):
            if before.get(name) != after.get(name):
                changed += 1
                print(f"{new.stem}: {name} {before.get(name, '(none)')} -> {after.get(name, '(none)')}")
    print(f"{changed} pins differ from {old_dir}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
