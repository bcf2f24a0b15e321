"""Tokenizer: exact round trip on mixed Chinese text, byte fallback, special ids, checksums,
deterministic training, and the training job's bounded, seeded sample."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from filters.classifiers.classify import ModelError
from filters.tokenizer import (
    EOD,
    META_FILE,
    MODEL_FILE,
    NEWLINE,
    SPACE,
    TokenizerParams,
    ZhTokenizer,
    presegment,
    train_sentencepiece,
    training_lines,
)

TINY = TokenizerParams(vocab_size=2000, character_coverage=0.98)  # 0.99 needs > 2000 pieces here


def corpus_texts(n_news: int = 120, n_reviews: int = 60) -> list[str]:
    """People's Daily 1998 articles and product reviews (Latin words, digits, ASCII punctuation)."""
    from demo.sources import news_pages, review_pages

    pages = news_pages()[:n_news] + review_pages(random.Random(0))[:n_reviews]
    return ["\n".join([title, *paras]) for title, paras, _ in pages]


def train_tiny_tokenizer(out_dir: Path, texts: list[str] | None = None) -> dict:
    texts = corpus_texts() if texts is None else texts
    lines = [line for t in texts for line in training_lines(t)]
    return train_sentencepiece(lines, out_dir, TINY, {"documents": len(texts), "chars": sum(map(len, texts))})


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("tok") / "tokenizer"
    train_tiny_tokenizer(out)
    return out


@pytest.fixture(scope="module")
def tok(tok_dir):
    return ZhTokenizer.load(tok_dir)


ROUND_TRIP = [
    "中华人民共和国成立于1949年10月1日，首都是北京。",
    "全角标点：“引号”、《书名》（括号）！？……——；",
    "half-width punctuation: (a), [b]; {c}! ok? \"quoted\" 'single' 50% & #1",
    "混合 Latin words 与 GDP 增长 8.5%，iPhone 15 Pro 售价 7999 元。",
    "多个空格    在这里，  还有前后空格  ",
    "第一段\n\n第二段\n  缩进的第三段\n",
    "\n开头换行，结尾也换行\n\n",
    "制表符\t和 Windows 换行\r\n以及全角空格\u3000\u3000和不换行空格\u00a0。",
    "表情😀🎉和生僻字𠀀𪚥龘，还有组合字符e\u0301。",
    "ＡＢＣ全角字母和１２３全角数字不被 NFKC 折叠",
    "文本里的 <eod> 和 <unk> 只是字符",
    "",
    " ",
    "\n",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_decode_inverts_encode(tok, text):
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.eod_id not in ids and tok.pad_id not in ids


def test_round_trip_on_training_corpus_documents(tok):
    texts = corpus_texts(n_news=140, n_reviews=70)[-40:]  # the tail was not in the training sample
    batch = tok.encode_batch(texts)
    assert batch == [tok.encode(t) for t in texts]
    assert [tok.decode(ids) for ids in batch] == texts
    assert sum(map(len, batch)) < sum(map(len, texts)) * 1.5  # BPE merges something even at 2,000


def test_unseen_characters_fall_back_to_bytes_not_unk(tok):
    ids = tok.encode("😀𠀀")
    pieces = [tok.id_to_piece(i) for i in ids]
    assert tok.unk_id not in ids
    assert {"<0xF0>", "<0x9F>", "<0x98>", "<0x80>"} <= set(pieces)  # 😀 is F0 9F 98 80


def test_special_ids_are_distinct_and_recorded(tok, tok_dir):
    meta = json.loads((tok_dir / META_FILE).read_text(encoding="utf-8"))
    assert (tok.unk_id, tok.pad_id, tok.eod_id) == (0, 1, 2)
    assert meta["special_ids"] == {"unk": 0, "pad": 1, "eod": 2, "bos": -1}
    assert tok.id_to_piece(tok.eod_id) == EOD
    assert tok.decode([tok.eod_id, tok.pad_id]) == ""
    assert meta["vocab_size"] == tok.vocab_size == TINY.vocab_size
    assert meta["sample"]["documents"] == 180 and meta["sample"]["chars"] > 50_000
    assert meta["sentencepiece"]["normalization_rule_name"] == "identity"
    assert meta["sentencepiece"]["byte_fallback"] is True


def test_presegmentation_rule():
    assert presegment("我爱北京 天安门\n") == f"我 爱 北京 {SPACE} 天安门 {NEWLINE}"
    lines = training_lines("第一段。\n第二段。" + "长" * 5000, max_bytes=1000)
    assert all("\n" not in line and len(line.encode()) <= 1000 for line in lines)
    assert lines[0].endswith(NEWLINE)
    assert "".join(lines).replace(" ", "") == presegment("第一段。\n第二段。" + "长" * 5000).replace(" ", "")


def test_join_words_marks_as_word_by_word():
    # The joined fast path (replaces) against marking each word on its own (the definition):
    # spaces and newlines as words and inside words, the marks themselves, a NUL (word-by-word path).
    from filters.tokenizer import SEP, join_words

    cases = [
        ["我", " ", "爱", "\n"],
        ["a b", "\n\n", "c"],
        [SPACE, " ", NEWLINE, "\u2581"],
        ["x\x00", " ", "y"],
        ["\r\n", "\t", "  "],
        [],
    ]
    for words in cases:
        text = "".join(words)
        assert join_words(words, text) == SEP.join(w.replace(" ", SPACE).replace("\n", NEWLINE) for w in words)


def test_reserved_block_characters_are_the_documented_exception(tok):
    assert tok.decode(tok.encode(f"a{SPACE}b{NEWLINE}c")) == "a b\nc"


def test_checksum_mismatch_is_refused(tok_dir, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(tok_dir, bad)
    data = bytearray((bad / MODEL_FILE).read_bytes())
    data[-1] ^= 0x01
    (bad / MODEL_FILE).write_bytes(bytes(data))
    with pytest.raises(ModelError, match="checksum mismatch"):
        ZhTokenizer.load(bad)
    with pytest.raises(ModelError, match="the caller says"):
        ZhTokenizer.load(tok_dir, expected_sha256="0" * 64)
    (bad / META_FILE).unlink()
    with pytest.raises(ModelError, match="not a tokenizer directory"):
        ZhTokenizer.load(bad)


def test_training_is_deterministic(tok_dir, tmp_path):
    meta = train_tiny_tokenizer(tmp_path / "again")
    assert meta["sha256"] == json.loads((tok_dir / META_FILE).read_text())["sha256"]
    assert (tmp_path / "again" / MODEL_FILE).read_bytes() == (tok_dir / MODEL_FILE).read_bytes()


def test_too_small_vocabulary_is_a_clear_error(tmp_path):
    """A refusal (the jobs' one line and exit 2, no traceback) that names the setting to change."""
    from base.errors import Refusal
    from jobs.cli import run_job

    lines = [presegment(t) for t in corpus_texts(40, 0)]
    with pytest.raises(Refusal, match=r"tokenizer\.vocab_size=300 on this sample .*character_coverage") as e:
        train_sentencepiece(lines, tmp_path / "x", TokenizerParams(vocab_size=300))
    assert "\n" not in str(e.value)
    assert run_job(lambda: train_sentencepiece(lines, tmp_path / "y", TokenizerParams(vocab_size=300))) == 2


@pytest.mark.slow
def test_train_tokenizer_job_samples_bounded_and_publishes_atomically(spark, tmp_path):
    from etl.shards.tokenizer_train import train_tokenizer
    from jobs.config import load_config
    from jobs.train_tokenizer import TrainTokenizerConfig

    def train(cfg, inputs, output, spark):
        return train_tokenizer(spark.read.parquet(*inputs), cfg.tokenizer, output, {})

    texts = corpus_texts()
    docs = tmp_path / "documents"
    spark.createDataFrame([(f"d{i:04d}", t) for i, t in enumerate(texts)], "doc_id string, text string").repartition(
        3
    ).write.parquet(str(docs))
    cfg = load_config(
        TrainTokenizerConfig,
        None,
        [
            "tokenizer.vocab_size=2000",
            "tokenizer.character_coverage=0.98",
            "tokenizer.sample.max_docs=150",
            "tokenizer.sample.max_chars=1000000",
        ],
    )
    out = tmp_path / "tokenizer"
    meta = train(cfg, [str(docs)], str(out), spark=spark)
    assert meta["sample"]["documents"] == 150 and meta["sample"]["chars"] <= 1_000_000
    assert sorted(p.name for p in out.iterdir()) == [META_FILE, MODEL_FILE]
    assert [p.name for p in tmp_path.iterdir() if "staging" in p.name] == []
    tok = ZhTokenizer.load(out)
    assert tok.decode(tok.encode(texts[0])) == texts[0]

    capped = load_config(
        TrainTokenizerConfig,
        None,
        ["tokenizer.vocab_size=2000", "tokenizer.character_coverage=0.98", "tokenizer.sample.max_chars=60000"],
    )
    again = train(capped, [str(docs)], str(out), spark=spark)  # replaces the first one
    assert 0 < again["sample"]["chars"] <= 60_000 and again["sample"]["documents"] < 150
    assert ZhTokenizer.load(out).sha256 == again["sha256"]


# --- the segmentation engine changes nothing that comes out (issue 14) ------------------------


def _reference_ids(tok: ZhTokenizer, texts: list[str]) -> list[list[int]]:
    """Today's rule, spelled out: jieba 0.42.1 words, each marked, ' '-joined, SentencePiece."""
    import jieba

    marks = str.maketrans({" ": SPACE, "\n": NEWLINE})
    return [tok.sp.encode(" ".join(w.translate(marks) for w in jieba.lcut(t, HMM=False))) for t in texts]


@pytest.fixture(scope="module")
def varied_texts() -> list[str]:
    from filters.text.segment import parity_sample

    return (
        corpus_texts(n_news=160, n_reviews=80)[-60:]
        + ROUND_TRIP
        + list(parity_sample())
        + ["nul\x00inside 和\x00 空格"]
    )


def test_engines_give_the_same_ids_as_the_jieba_rule(tok_dir, varied_texts):
    native, reference = ZhTokenizer.load(tok_dir), ZhTokenizer.load(tok_dir, engine="jieba")
    assert (native.segmenter.engine, reference.segmenter.engine) == ("rjieba", "jieba")
    ids = native.encode_batch(varied_texts)
    assert ids == reference.encode_batch(varied_texts) == _reference_ids(native, varied_texts)
    assert [native.decode(x) for x in ids[:60]] == varied_texts[:60]


def test_shards_are_byte_identical_to_the_jieba_rule(tok_dir, varied_texts, tmp_path):
    """Shard files (the Megatron writer) from the native engine's ids, the jieba engine's, and
    today's rule spelled out with jieba."""
    import hashlib

    import numpy as np

    from base.indexed_dataset import IndexedDatasetWriter

    native = ZhTokenizer.load(tok_dir)
    sources = {
        "rjieba": native.encode_batch(varied_texts),
        "reference": _reference_ids(native, varied_texts),
        "jieba": ZhTokenizer.load(tok_dir, engine="jieba").encode_batch(varied_texts),
    }
    digests = {}
    for name, docs in sources.items():
        with IndexedDatasetWriter(tmp_path / name, "uint16") as writer:
            for ids in docs:
                writer.add_document(np.array(ids + [native.eod_id], dtype=np.int64))
        digests[name] = [hashlib.sha256((tmp_path / f"{name}.{k}").read_bytes()).hexdigest() for k in ("bin", "idx")]
    assert digests["rjieba"] == digests["reference"] == digests["jieba"]


def test_metadata_records_the_engine_and_another_engine_needs_parity(tok_dir, tmp_path, monkeypatch):
    from filters.text import segment

    meta = json.loads((tok_dir / META_FILE).read_text(encoding="utf-8"))
    assert meta["presegment"]["segmenter"] == {
        "engine": "rjieba",
        "version": "0.2.2",
        "hmm": False,
        "algorithm": segment.ALGORITHM,
    }
    assert meta["versions"]["rjieba"] == "0.2.2"
    old = tmp_path / "old"  # a tokenizer from before the record: built with jieba
    shutil.copytree(tok_dir, old)
    del meta["presegment"]["segmenter"]
    (old / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    assert ZhTokenizer.load(old).encode("中文分词") == ZhTokenizer.load(tok_dir).encode("中文分词")
    failing = segment.ParityReport("rjieba", "0.2.2", "0.42.1", False, documents=624, chars=9, differing=1)
    monkeypatch.setattr(segment, "_sample_parity", lambda engine, hmm: failing)
    with pytest.raises(ModelError, match="built with jieba 0.42.1.*1 of 624 documents differ"):
        ZhTokenizer.load(old)
    assert ZhTokenizer.load(old, engine="jieba").segmenter.engine == "jieba"  # its own engine: no check
    assert ZhTokenizer.load(tok_dir).segmenter.engine == "rjieba"  # built with this engine: no check


def test_token_arrays_match_arrow_on_nested_lists(tok, varied_texts):
    """The tokenize stage's columns (etl.shards.stage.token_arrays) against pyarrow's own conversion."""
    import pyarrow as pa

    from etl.shards.stage import TOKENS_SCHEMA, token_arrays

    for ids in (tok.encode_batch(varied_texts), [[], [5], []], []):
        tokens, n_tokens = token_arrays(ids)
        assert tokens.equals(pa.array(ids, type=TOKENS_SCHEMA.field("tokens").type))
        assert n_tokens.equals(pa.array([len(x) for x in ids], type=pa.int32()))


def test_tokenize_audit_stops_on_a_difference(tok_dir, varied_texts, monkeypatch):
    from etl.shards.stage import audit_presegmentation
    from filters.text import segment

    tok = ZhTokenizer.load(tok_dir)
    keys = [f"d{i}" for i in range(len(varied_texts))]
    audit_presegmentation(tok, keys, varied_texts, 1)  # the same words: passes
    broken = segment.Segmenter("rjieba", False)
    real = broken._cut
    monkeypatch.setattr(broken, "_cut", lambda t: real(t)[1:])
    tok.segmenter = broken
    with pytest.raises(segment.SegmentationMismatch, match="tokenization.*document 'd0'"):
        audit_presegmentation(tok, keys, varied_texts, 1)
    audit_presegmentation(tok, keys, varied_texts, 0)
