"""t2s skips OpenCC only where OpenCC cannot change the text: the shipped key list is the one the
installed dictionaries give, every changing key makes the check fire, and the skip is on."""

from __future__ import annotations

import opencc
import pytest

from filters.text.convert import T2S, dump_keys, read_keys_file

FILLER = "我们在这里讨论经济发展的问题。"  # simplified text with no changing key


@pytest.fixture(scope="module")
def t2s() -> T2S:
    return T2S("t2s")


def test_key_list_matches_the_installed_dictionaries():
    assert dump_keys("t2s") == read_keys_file()


def test_skip_is_on_for_t2s_and_off_for_other_configs(t2s):
    assert t2s.skips
    assert not T2S("s2t").skips  # no key list for it: every text goes through OpenCC


def test_every_changing_key_is_converted(t2s):
    cc = opencc.OpenCC("t2s")
    _, keys = read_keys_file()
    assert len(keys) > 5000
    missed = [k for k in keys if not t2s.may_change(FILLER + k + FILLER)]
    assert not missed, missed[:20]
    for k in keys:
        text = FILLER + k + FILLER
        assert t2s.convert(text) == cc.convert(text), k


def test_plain_simplified_text_is_skipped(t2s):
    assert not t2s.may_change(FILLER * 10)
    assert t2s.convert(FILLER) is FILLER
