"""Traditional -> simplified (PanGu-α §3.1.1) with OpenCC, skipped where it cannot change anything.

OpenCC's t2s rewrites a text only where one of its dictionary keys whose value differs from the
key ("changing keys") occurs in it. ``resources/opencc_t2s_keys.txt`` lists those keys, dumped
from the dictionaries of the pinned OpenCC (``python -m filters.text.convert --dump``) together with
their sha256. A text holding none of the one-character keys, and none of the longer keys that
hold no one-character key, is returned as it is; anything else goes through OpenCC. When the
installed dictionaries are not the ones the list was made from, or the config is not t2s, every
text goes through OpenCC (no skip), so the output never depends on the list being current.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import subprocess
import sys
import tempfile
from importlib.resources import files
from pathlib import Path

import ahocorasick_rs
import numpy as np
import opencc

from filters.text.chars import CharScan, char_table, scan

log = logging.getLogger("zhcorpus")
KEYS_FILE = files("filters") / "resources" / "opencc_t2s_keys.txt"
SKIPPABLE_CONFIGS = ("t2s", "t2s.json")


def opencc_share() -> Path:
    return Path(opencc.__file__).parent / "clib" / "share" / "opencc"


def _config_dicts(config: str) -> list[str]:
    """The dictionary files a config reads (normalisation and conversion chain), in order."""
    cfg = json.loads((opencc_share() / (config if config.endswith(".json") else config + ".json")).read_text())
    out: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                out.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in cfg.items() if k in ("normalization", "conversion_chain", "segmentation")})
    return list(dict.fromkeys(out))


def _fingerprints(names: list[str]) -> dict[str, str]:
    return {n: hashlib.sha256((opencc_share() / n).read_bytes()).hexdigest() for n in names}


def read_keys_file() -> tuple[dict[str, str], list[str]]:
    """(dictionary file -> sha256, changing keys) of the shipped list."""
    sums, keys = {}, []
    for line in KEYS_FILE.read_text(encoding="utf-8").splitlines():
        if line.startswith("# sha256 "):
            name, digest = line[len("# sha256 ") :].split(" ")
            sums[name] = digest
        elif line and not line.startswith("#"):
            keys.append(line)
    return sums, keys


class T2S:
    """``convert(text, scanned)`` -> simplified text; ``skips`` says whether the key check is on."""

    def __init__(self, config: str = "t2s"):
        self._cc = opencc.OpenCC(config)
        self._table: np.ndarray | None = None  # 1 for the one-character keys
        self._phrases: ahocorasick_rs.AhoCorasick | None = None  # the longer keys without a 1-char key
        if config in SKIPPABLE_CONFIGS:
            sums, keys = read_keys_file()
            if sums and _fingerprints(list(sums)) == sums and set(sums) == set(_config_dicts(config)):
                self._load(keys)
            else:
                log.warning("OpenCC dictionaries differ from %s: every text goes through OpenCC", KEYS_FILE)

    def _load(self, keys: list[str]) -> None:
        single = {k for k in keys if len(k) == 1}
        table = np.zeros(len(char_table()), dtype=np.uint8)
        table[[ord(k) for k in single]] = 1
        phrases = [k for k in keys if len(k) > 1 and not single.intersection(k)]
        self._table = table
        self._phrases = ahocorasick_rs.AhoCorasick(phrases) if phrases else None

    @property
    def skips(self) -> bool:
        return self._table is not None

    def may_change(self, text: str, scanned: CharScan | None = None) -> bool:
        if self._table is None:
            return True
        codes = (scanned if scanned is not None else scan(text)).codes
        if self._table[codes].any():
            return True
        return self._phrases is not None and bool(self._phrases.find_matches_as_indexes(text))

    def convert(self, text: str, scanned: CharScan | None = None) -> str:
        return self._cc.convert(text) if text and self.may_change(text, scanned) else text


def dump_keys(config: str = "t2s") -> tuple[dict[str, str], list[str]]:
    """The changing keys of the installed dictionaries, through the ``opencc_dict`` tool that
    ships with the opencc package (ocd2 -> text). Used to (re)make KEYS_FILE and by its test."""
    clib = Path(opencc.__file__).parent / "clib"
    names = _config_dicts(config)
    keys: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            out = Path(tmp) / (name + ".txt")
            subprocess.run(
                [
                    str(clib / "bin" / "opencc_dict"),
                    "-i",
                    str(opencc_share() / name),
                    "-o",
                    str(out),
                    "-f",
                    "ocd2",
                    "-t",
                    "text",
                ],
                check=True,
                env={"LD_LIBRARY_PATH": str(clib / "lib64")},
            )
            for line in out.read_text(encoding="utf-8").splitlines():
                key, _, values = line.partition("\t")
                if key and values.split(" ")[0] != key:
                    keys.add(key)
    return _fingerprints(names), sorted(keys)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", type=Path, required=True, help="write the changing keys of t2s here")
    args = p.parse_args(argv)
    sums, keys = dump_keys()
    lines = [
        f"# OpenCC t2s keys whose value differs from the key (opencc {opencc.__version__}); "
        "made by: python -m filters.text.convert --dump filters/resources/opencc_t2s_keys.txt"
    ]
    lines += [f"# sha256 {name} {digest}" for name, digest in sums.items()] + keys
    args.dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(keys)} keys -> {args.dump}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
