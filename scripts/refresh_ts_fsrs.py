#!/usr/bin/env python3
"""Vendor ts-fsrs (FSRS for JavaScript, MIT) into study.html's static files at a pinned version.

usage: python scripts/refresh_ts_fsrs.py [VERSION]     (default: the version in VERSION below)

Fetches the package from the npm registry with `npm pack`, keeps its UMD build, its licence
and the version, and prints what changed. After a refresh, run the tests: one compares the
vendored scheduler with the Python `fsrs` package on fixed rating sequences, so a release
that schedules differently is caught before it reaches a learner.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "5.4.2"
VENDOR = Path(__file__).resolve().parents[1] / "src" / "ainfra_cards" / "static" / "vendor"


def main() -> None:
    version = sys.argv[1] if len(sys.argv) > 1 else VERSION
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["npm", "pack", f"ts-fsrs@{version}"], cwd=tmp, check=True, capture_output=True)
        (tgz,) = Path(tmp).glob("ts-fsrs-*.tgz")
        with tarfile.open(tgz) as tar:
            files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    code = files["package/dist/index.umd.js"].decode("utf-8")
    if "</script" in code.lower():
        raise SystemExit("the UMD build contains '</script' and cannot be inlined")
    VENDOR.mkdir(parents=True, exist_ok=True)
    (VENDOR / "ts-fsrs.umd.js").write_text(code, encoding="utf-8")
    (VENDOR / "ts-fsrs.LICENSE").write_bytes(files["package/LICENSE"])
    (VENDOR / "ts-fsrs.VERSION").write_text(version + "\n", encoding="utf-8")
    print(f"vendored ts-fsrs {version}: {len(code)} characters into {VENDOR}")


if __name__ == "__main__":
    main()
