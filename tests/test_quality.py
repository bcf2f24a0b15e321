"""Label-free document statistics (filters.quality.signals): each statistic on a small document whose
value is worked out by hand in a comment; the batch form against the one-document form; the
contact detector on obfuscated positives and on numbers that are not contacts; keyword stuffing
and classical Chinese against ordinary prose."""

from __future__ import annotations

import math

import numpy as np
import pytest

from filters.quality import signals as q
from filters.quality.contact import contact_spans
from filters.text.chars import han_ratio
from filters.text.markdown import prose

NEWS = (
    "新华社北京１月５日电　国务院总理李鹏今天在人民大会堂会见了来访的客人。双方就两国关系和共同关心的"
    "国际问题交换了意见。李鹏说，中国政府高度重视发展同各国的友好合作关系，愿意在和平共处五项原则的"
    "基础上，进一步加强在经济、贸易、科技和文化等领域的交流与合作。\n"
    "客人表示，这次访问的目的是增进了解，扩大合作。他对中国经济建设取得的巨大成就表示钦佩。"
)


def sig(text: str, words: list[str] | None = None) -> dict[str, float]:
    return q.doc_signals(text, words)


def test_signal_names_fixed_order():
    assert q.SIGNAL_NAMES == (
        "line_punct_frac",
        "short_line_frac",
        "separator_line_frac",
        "date_line_frac",
        "dup_line_char_frac",
        "dup_para_char_frac",
        "top2_word_cov",
        "top3_word_cov",
        "top4_word_cov",
        "dup5_word_cov",
        "dup6_word_cov",
        "dup7_word_cov",
        "dup8_word_cov",
        "dup9_word_cov",
        "dup10_word_cov",
        "function_word_ratio",
        "function_word_distinct",
        "symbol_ratio",
        "digit_ratio",
        "latin_ratio",
        "punct_ratio",
        "contact_density",
        "han_ratio",
    )
    assert {s.bad_when for s in q.SIGNALS} == {"high", "low"}
    assert list(sig(NEWS)) == list(q.SIGNAL_NAMES)


def test_line_punct_frac():
    # 5 lines (the trailing empty one is not a line): 。 yes; 吧 no; ！” yes (closer after !);
    # （完） no (closer after 完); "world." yes -> 3/5
    text = "今天天气很好。\n我们去公园吧\n他说：“走吧！”\n（完）\nHello world.\n\n"
    assert sig(text)["line_punct_frac"] == pytest.approx(3 / 5)


def test_date_line_frac():
    # 5 lines: "…　2018年3月13日" yes; "…　10-20" yes; "…　3月5日 " yes (trailing space); "增长13.5%。" no
    # (a sentence); "第16页" no -> 3/5. Full-width digits count: "１２:３０" twice -> 2/2.
    text = "烟台网线布线最新动态　2018年3月13日\n江门除甲醛汇总　10-20\n如何挑选地暖　3月5日 \n增长13.5%。\n第16页"
    assert sig(text)["date_line_frac"] == pytest.approx(3 / 5)
    assert sig("发布于 １２:３０\n\n更新于 １３:３０")["date_line_frac"] == 1.0  # blank lines between: still a list
    assert sig(NEWS)["date_line_frac"] == 0.0


def test_dated_headers_are_no_list():
    """Issue 32: a forum thread dates each post in a header line followed by the post, a news page
    ends a story with its date; a dated line counts only beside another dated line (a list of links
    dates every item)."""
    thread = "主题：大家最近在读什么？\n\n" + "\n\n".join(
        f"书虫{i} 发表于 2021-07-{10 + i} 10:{10 + i}\n种麻得麻，种豆得豆，这话说得真好。" for i in range(8)
    )
    assert sig(thread)["date_line_frac"] == 0.0
    assert sig(NEWS + "\n2018年3月13日")["date_line_frac"] == 0.0
    listing = "\n".join(f"家政服务常见问题解答大全{i}　2024-02-{10 + i}" for i in range(8))
    assert sig(listing)["date_line_frac"] == 1.0
    # two dated items of a list among posts: both count, the lone headers do not -> 2/19
    assert sig(thread + "\n相关阅读　2024-02-24\n家政服务大全　10-20")["date_line_frac"] == pytest.approx(2 / 19)


def test_date_lines_match_a_whole_text_search():
    # The windowed search (a stamp's last character, at most _DATE_MAX before it) finds the lines
    # that DATE_END.finditer over the whole text finds: trailing spaces and brackets, two
    # brackets (no stamp), "\r", a stamp after a long prefix, stamps that are not at the end.
    lines = [
        "标题　2018年3月13日",
        "标题 10-20 ",
        "标题（2024-02-24）",
        "标题 2024-02-24))",
        "x\u3000３月５日\u3000）\u3000",
        "12:30:45",
        "2019-1-1\r",
        "长" * 40 + "2019/12/31日",
        "2018年3月13日之后",
        "日",
        "10-2",
        "1:2",
        "",
        "  ",
        "第16页",
        "2019.1",
        "a12:3456",
        "时间：12：30 ) ",
        "99年9月",
    ]
    rng = np.random.default_rng(5)
    texts = ["\n".join(rng.choice(lines, size=rng.integers(1, 12))) for _ in range(300)] + lines
    joined = "\n".join(texts)
    expected = np.zeros(len(texts))
    dated = {joined.count("\n", 0, m.start()) for m in q.DATE_END.finditer(joined)}  # global line numbers
    line = 0
    for i, t in enumerate(texts):
        n_lines = t.count("\n") + 1
        real = [line + k for k, x in enumerate(t.split("\n")) if x.strip()]  # non-empty lines, in order
        stamped = [n in dated for n in real]
        after = [*stamped[1:], False]
        beside = [s and ((k > 0 and stamped[k - 1]) or after[k]) for k, s in enumerate(stamped)]
        expected[i] = sum(beside) / len(real) if real else 0.0
        line += n_lines
    got = q.signals_batch(texts)["date_line_frac"]
    assert got.tolist() == pytest.approx(expected.astype(np.float32).tolist())
    assert expected.max() > 0


def test_line_punct_frac_closers_limit():
    # 。 followed by 3 closers counts, by 4 does not (MAX_CLOSERS = 3) -> 1/2
    assert sig("好。”）」\n好。”）」』")["line_punct_frac"] == pytest.approx(1 / 2)


def test_short_line_frac():
    # visible characters: 9 (short), 10 (not), 10 letters between spaces (not), 2 (short) -> 2/4
    text = "一二三四五六七八九\n一二三四五六七八九十\na b c d e f g h i j\n  短行  "
    assert sig(text)["short_line_frac"] == pytest.approx(2 / 4)
    # a verse or clause ends in punctuation and is not a fragment; a title in 《》 neither; an
    # author's name, a menu item, and a line ending in a separator (──, |) are
    poem = "《春晓》\n孟浩然\n春眠不觉晓，\n处处闻啼鸟。\n首页 |\n新闻──"
    assert sig(poem)["short_line_frac"] == pytest.approx(3 / 6)


def test_separator_line_frac():
    lines = [
        "首页 > 新闻 > 正文",  # (a): 2 separators + 4 spaces over 12 characters = 0.5 >= 0.3 -> yes
        "首页|新闻|体育|财经",  # (a): 3/11 < 0.3; (b): 3 separators, no other punctuation, 4 items <= 8 -> yes
        "三国演义 第四十回 蔡夫人议献荆州\u3000诸葛亮火烧新野",  # no separator; 3 spaces / 25 -> no
        "大体/小体（dàtǐ/xiǎotǐ）",  # 2 "/" over 18; brackets are other punctuation, so not (b) -> no
        "他说——我们走吧。",  # 2 dashes over 9; 。 -> no
        "────────",  # 8/8 -> yes
    ]
    assert sig("\n".join(lines))["separator_line_frac"] == pytest.approx(3 / 6)


def test_duplicate_lines_without_blank_lines():
    # lines (chars): 第一行内容 5, 第二行 3, 第一行内容 5 (dup), 第二行 3 (dup after stripping), 第三行 3
    # visible = 19, duplicated = 8; no blank line, so paragraphs are the lines: same value
    s = sig("第一行内容\n第二行\n第一行内容\n  第二行  \n第三行")
    assert s["dup_line_char_frac"] == pytest.approx(8 / 19)
    assert s["dup_para_char_frac"] == pytest.approx(8 / 19)


def test_duplicate_paragraphs():
    # blocks: [甲乙丙, 丁戊] 5, [甲乙丙, 丁戊] 5 (dup), [甲乙丙, 己庚] 5 -> para 5/15
    # lines: 甲乙丙 3, 丁戊 2, 甲乙丙 3 (dup), 丁戊 2 (dup), 甲乙丙 3 (dup), 己庚 2 -> 8/15
    s = sig("甲乙丙\n丁戊\n\n甲乙丙\n丁戊\n\n甲乙丙\n己庚")
    assert s["dup_para_char_frac"] == pytest.approx(5 / 15)
    assert s["dup_line_char_frac"] == pytest.approx(8 / 15)
    # the same lines in another order are another paragraph: [甲乙, 丙丁] then [丙丁, 甲乙] -> 0
    assert sig("甲乙\n丙丁\n\n丙丁\n甲乙")["dup_para_char_frac"] == 0.0


PERIODIC = list("甲乙丙丁戊甲乙丙丁戊甲乙丙丁戊己")  # 16 one-character words


def test_top_ngram_coverage():
    # 2-grams 甲乙 乙丙 丙丁 丁戊 occur 3 times each (tie in count and characters): the first, 甲乙,
    # covers words 0,1,5,6,10,11 -> 6/16; 甲乙丙 x3 -> 9/16; 甲乙丙丁 x3 -> 12/16
    s = sig("".join(PERIODIC), PERIODIC)
    assert s["top2_word_cov"] == pytest.approx(6 / 16)
    assert s["top3_word_cov"] == pytest.approx(9 / 16)
    assert s["top4_word_cov"] == pytest.approx(12 / 16)


def test_duplicated_ngram_coverage():
    # every 5-gram starting at 0..10 recurs 5 words away; the one at 11 holds 己 -> words 0..14 = 15/16
    # 10-grams: at 0 and 5 only (those at 1..4 and 6 differ) -> words 0..14 again = 15/16
    s = sig("".join(PERIODIC), PERIODIC)
    for n in range(5, 11):
        assert s[f"dup{n}_word_cov"] == pytest.approx(15 / 16), n
    # 11 one-character words, no 5-gram twice
    assert sig("甲乙丙丁戊己庚辛壬癸子", list("甲乙丙丁戊己庚辛壬癸子"))["dup5_word_cov"] == 0.0


def test_top_ngram_ties_go_to_more_characters_and_overlaps_count_once():
    # 我爱 (2 chars, first), 爱北京 (3), 北京天安门 (5) each twice: the longest wins, words 2,3,6,7 -> 10/14
    words = ["我", "爱", "北京", "天安门", "我", "爱", "北京", "天安门"]
    assert sig("".join(words), words)["top2_word_cov"] == pytest.approx(10 / 14)
    # 哈哈 at 0,1,2,3 covers all 5 words once (not 4 x 2 = 8 characters) -> 1.0
    assert sig("哈哈哈哈哈", list("哈哈哈哈哈"))["top2_word_cov"] == pytest.approx(1.0)
    # 哈哈 (at 0, 1: overlapping, 3 words) and 甲乙 (at 3, 5: 4 words) tie in count and characters: the
    # first, 哈哈, is taken -> 3/7
    assert sig("哈哈哈甲乙甲乙", list("哈哈哈甲乙甲乙"))["top2_word_cov"] == pytest.approx(3 / 7)
    # nothing repeats -> 0, not the single most frequent 2-gram's share
    assert sig("我爱北京", ["我", "爱", "北京"])["top2_word_cov"] == 0.0


def test_ngrams_skip_punctuation_and_stay_in_their_document():
    # the comma is no word: words 我 爱 北京 我 爱 上海 (8 chars); 我爱 twice -> 4/8
    words = ["我", "爱", "北京", "，", "我", "爱", "上海"]
    assert sig("".join(words), words)["top2_word_cov"] == pytest.approx(4 / 8)
    # the same 2-gram in two different documents is not a repeat in either
    out = q.signals_batch(["我爱北京", "我爱上海"])
    assert out["top2_word_cov"].tolist() == [0.0, 0.0]


def test_function_words():
    # words 我 的 书 在 桌子 上 (。 is no word): 我 的 在 are function words -> 3/6, 3 distinct
    s = sig("我的书在桌子上。")
    assert s["function_word_ratio"] == pytest.approx(3 / 6)
    assert s["function_word_distinct"] == 3
    # 的 three times is still one distinct function word: words 好 的 好 的 好 的 -> 3/6, 1 distinct
    s = sig("好的好的好的", ["好", "的", "好", "的", "好", "的"])
    assert (s["function_word_ratio"], s["function_word_distinct"]) == (pytest.approx(0.5), 1)


CLASSICAL = "子曰：学而时习之，不亦说乎？有朋自远方来，不亦乐乎？人不知而不愠，不亦君子乎？"


def test_classical_chinese_is_not_a_keyword_list():
    # words: 子 曰 学 而 时 习 之 不 亦 说 乎 有朋自远方来 不亦乐乎 人不知 而 不 愠 不 亦 君子 乎 (21);
    # function words 曰 而 之 不 亦 乎 而 不 不 亦 乎 (11) -> 11/21; distinct 曰 而 之 不 亦 乎 -> 6
    s = sig(CLASSICAL)
    assert s["function_word_ratio"] == pytest.approx(11 / 21)
    assert s["function_word_distinct"] == 6
    passage = CLASSICAL + (
        "\n有子曰：其为人也孝弟，而好犯上者，鲜矣；不好犯上，而好作乱者，未之有也。君子务本，本立而道生。"
        "孝弟也者，其为仁之本与！\n太史公曰：余读孔氏书，想见其为人。"
    )
    keywords = "石家庄 水半夏 最新 口碑 排行榜 价格 批发 基地 种植 公司 厂家 电话 地址 哪里有 多少钱"
    # 18 words; 哪里有 is cut 哪里 有, both function words -> 2/18
    assert sig(keywords)["function_word_ratio"] == pytest.approx(2 / 18)
    assert sig(passage)["function_word_ratio"] > 3 * (2 / 18)


def test_character_ratios():
    # visible: 中文 (Han 2), ABC é Ｚ (Latin 5), 123 ① (digits 4), ， (punct 1), ★ 😀 (symbols 2) = 14
    s = sig("中文ABC123①，★😀 é Ｚ")
    # over units of writing: 中 文, the words ABC, é and Ｚ one each, 1 2 3 ① one each (punctuation
    # and symbols are not counted)
    assert s["han_ratio"] == pytest.approx(2 / 9)
    assert s["latin_ratio"] == pytest.approx(5 / 14)
    assert s["digit_ratio"] == pytest.approx(4 / 14)
    assert s["punct_ratio"] == pytest.approx(1 / 14)
    assert s["symbol_ratio"] == pytest.approx(2 / 14)
    # the box-drawing dash typeset as 破折号 is punctuation, not a symbol
    s = sig("一個世紀才盤點──百年大計")
    assert (s["punct_ratio"], s["symbol_ratio"]) == (pytest.approx(2 / 13), 0.0)


def test_han_ratio_is_filters_text():
    for text in (
        NEWS,
        CLASSICAL,
        "abc 中 𠀀 豈",
        "😀😀中",
        "晚风836 发表于 2022-12-16 23:38\n云想衣裳。",
        "见 `ls -l` 的输出",
        TIMINGS,
    ):
        assert sig(text)["han_ratio"] == pytest.approx(han_ratio(text), rel=1e-6)


# a benchmark's table: the figures (and the stamp) in its cells are data, the ✅ a mark of the table
TIMINGS = (
    "性能测试结果\n\n| 模式 | 耗时 | 日期 | 通过 |\n|---|---|---|---|\n"
    "| 文档模式 | 0.26 秒 | 2024-02-24 | ✅ |\n\n共 12 项。"
)


def test_a_tables_figures_and_marks_are_data():
    s = sig(TIMINGS)
    # units: 性能测试结果 6, 模式 耗时 日期 通过 8, 文档模式 秒 5, 共 项 2 (Han 21) and 1 2 outside the table
    assert s["han_ratio"] == pytest.approx(21 / 23)
    assert s["symbol_ratio"] == 0.0  # the ✅ of the cell
    assert s["digit_ratio"] > 0.1  # the digit rule still counts every figure (but the stamp's)
    outside = TIMINGS.replace("|", " ").replace("---", "")  # no table: its figures are units
    assert sig(outside)["han_ratio"] < 21 / 23 and sig(outside)["symbol_ratio"] > 0


def test_a_redacted_contact_is_still_a_contact():
    # the personal-data stage runs first: its placeholders stand for the phone and the address the
    # page offered (2 contacts over 28 visible characters); <IP> and an HTML tag are none
    text = "电话<PHONE>，邮箱<EMAIL>，服务器<IP>。"
    assert sig(text)["contact_density"] == pytest.approx(2000 / len(text), rel=1e-6)
    assert sig("电话<b>123</b>。")["contact_density"] == 0.0


def test_contact_density():
    # 加我微信：abc_123，或者扣扣：一二三四五六七。 has 26 visible characters and 2 ids -> 2000/26
    assert sig("加我微信：abc_123，或者扣扣：一二三四五六七。")["contact_density"] == pytest.approx(2000 / 26, rel=1e-6)
    assert sig(NEWS)["contact_density"] == 0.0


def test_stamps_are_no_figures():
    """Issue 32: the digits of date and time stamps count neither as digits nor as visible
    characters of digit_ratio: a thread of one-line posts under stamped headers has the digit
    ratio of its posts; a price list keeps its digits."""
    thread = "\n\n".join(
        f"夜读人{100 + i} 发表于 2017-11-{10 + i} 12:{30 + i}\n君子固穷，小人穷斯滥也。" for i in range(6)
    )
    # per post: 夜读人1xx (3 digits), 发表于, the stamp's "--:" (its digits left out) and the
    # sentence's 12 characters: 3 digits of 24
    digits, visible = 6 * 3, 6 * 24
    assert sig(thread)["digit_ratio"] == pytest.approx(digits / visible)
    prices = "大米 5元 3斤\n面粉 12元 10斤\n白糖 8元 2斤"
    assert sig(prices)["digit_ratio"] == pytest.approx(8 / 20)


def test_a_documents_stamps_do_not_depend_on_its_neighbours():
    """A page whose only stamps are written with slashes gets the same digit_ratio and han_ratio
    alone and batched beside a page that holds ':' or '-' (stamps were looked for only in a chunk
    holding one of those)."""
    page = "\n".join(f"读者来信 2018/03/{10 + i} 感谢编辑部的回复，我们会继续关注此事。" for i in range(6))
    alone = q.signals_batch([page])
    beside = q.signals_batch([page, "会议于 10:30 开始。"])
    for name in ("digit_ratio", "han_ratio"):
        assert alone[name][0] == beside[name][0], name
    assert alone["digit_ratio"][0] == 0.0  # its only digits are its stamps


def test_contact_density_counts_sites_not_citations():
    """Issue 32: a web address counts once per site and not at all as a link target (right after an
    opening bracket): a technical FAQ that cites its project's site five times hands over no
    contact; every phone number counts, repeated or not."""
    faq = (
        "问：获取途径\n答：最新版本可以在 https://www.debian.org/doc/FAQ/ (https://www.debian.org/doc/FAQ/) 访问。\n"
        "也可以在 https://www.debian.org/doc/user-manuals#faq (https://www.debian.org/doc/user-manuals#faq) 下载，"
        "源码在 [仓库](https://salsa.debian.org/ddp-team/debian-faq) 和 <https://salsa.debian.org/x> 中。"
    )
    visible = sum(not c.isspace() for c in prose(faq))  # the link's destination is markup
    assert sig(faq)["contact_density"] == pytest.approx(1000 / visible, rel=1e-6)  # debian.org, once
    ad = "官网：www.kndaj208.cc 电话 13812345678\n热线 13812345678，官网 www.kndaj208.cc，备用 http://abc719.top"
    visible = sum(not c.isspace() for c in ad)
    assert sig(ad)["contact_density"] == pytest.approx(4000 / visible, rel=1e-6)  # 2 phones, 2 sites


CONTACTS = [
    "徽信 abc_8888",
    "薇信号：zhangsan",
    "威信：８８６６５５４４",
    "扣扣：①②③④⑤⑥⑦",
    "企鹅号 1 2 3 4 5 6 7",
    "蔻蔻 一二三四五六七八",
    "vx: wang_2024",
    "微x 88-66-55-44",
    "加V：abc12345",
    "V信 ❶❷❸❹❺❻",
    "QQ群：12345678",
    "电话 010-12345678",
    "热线：(0311)8765432",
    "手机一三八一二三四五六七八",
    "请拨 1 3 8 1 2 3 4 5 6 7 8",
    "+86 138 1234 5678",
    "+8613812345678",
    "13812345678",
    "12345678（微信同号）",
    "www.example.com",
    "访问https://x.cn/abc",
    "网址 abc点com",
    "邮箱 abc@qq.com",
    "WeChat: lily_88",
    "徽信：yr⑧⑨⑧⑦⑤⑧④⓪④⓪",
    "企鹅号：bzn零七幺五九三零",
    "威芯：k７３７９５９７６３３",
    "卫星号：９６４１５４８６１",
]
NOT_CONTACTS = [
    "1998年1月1日，新华社北京电",
    "2021-06-01 上午召开电话会议",
    "电话：2021-06-01",
    "根据《民法典》第一百二十条的规定",
    "价格 1999 元，售价 12999 元",
    "ISBN 978-7-111-12345-6",
    "全国共有12345所学校，比去年增长3.5%，在校生2860万人。",
    "手机销量达到1500万部",
    "电话号码共有7位",
    "一九九八年一月一日",
    "二〇二一年十二月三十一日",
    "联系群众一万多人",
    "银行卡号 6222 0212 3456 7890 123",
    "2021年第1季度营收为123456789元",
    "hotel 12345678",
    "微信公众号 Python",
    "关注微信 Python 教程",
    "温度为-5℃到10℃，湿度85%",
    "第12345678号令",
    "型号：XR-12345",
    "订单 abc12345",
    "戊戌维新发生于1898年",
    "电话：abc12345",
]


@pytest.mark.parametrize("text", CONTACTS)
def test_contact_positives(text):
    assert len(contact_spans(text)) == 1, contact_spans(text)


@pytest.mark.parametrize("text", NOT_CONTACTS)
def test_contact_negatives(text):
    assert contact_spans(text) == [], [text[s:e] for s, e in contact_spans(text)]


def test_contact_lists_and_merges():
    # two numbers separated by a space are two ids; a domain inside an e-mail address is one
    assert len(contact_spans("电话：13812345678 13912345678")) == 2
    assert contact_spans("abc@qq.com") == [(0, 10)]


def seo_page() -> str:
    cities = ["石家庄", "保定", "唐山", "邯郸", "邢台", "沧州", "廊坊", "衡水"]
    lines = [f"{c}水半夏最新_{c}水半夏口碑_{c}水半夏排行榜" for c in cities]
    lines.append("大家还在搜：" + "、".join(f"{c}水半夏多少钱" for c in cities))
    return "\n".join(lines)


def test_keyword_stuffing_scores_far_higher_than_news():
    # 水 半夏 (3 chars) 28 times in 249 word characters (rjieba glues 水 to some city names): 84/249 = 0.34,
    # above Gopher's 0.20; 水 半夏 最新 (5 chars) and 水 半夏 多少 钱 (6) 8 times each: 40/249 = 0.16 and
    # 48/249 = 0.19 (Gopher: 0.18, 0.16); the news paragraph repeats none
    seo, news = sig(seo_page()), sig(NEWS)
    for n, floor in ((2, 0.3), (3, 0.15), (4, 0.15)):
        assert seo[f"top{n}_word_cov"] > floor, (n, seo)
        assert seo[f"top{n}_word_cov"] > news[f"top{n}_word_cov"] + 0.1, (n, seo, news)
    assert seo["function_word_ratio"] < 0.05 < news["function_word_ratio"]
    assert seo["line_punct_frac"] == 0.0 and news["line_punct_frac"] == 1.0


EMPTY_LIKE = ["", " ", "\n\n", "\u3000\t\r\n"]


def test_empty_texts_are_zero_not_nan():
    for text in EMPTY_LIKE:
        assert set(sig(text).values()) == {0.0}, text


MIXED = [
    NEWS,
    CLASSICAL,
    "",
    seo_page(),
    "  \n",
    "加我微信：abc_123\r\n\r\n加我微信：abc_123",
    "😀★※ | · | ─── \n首页 > 新闻",
    "".join(PERIODIC),
    "English only. Another line.\n\nEnglish only. Another line.",
    "一\n一\n一",
    "好。",
    "坏\ud800字符，坏\ud800字符。",
]  # a lone surrogate: rjieba takes UTF-8 only


def test_batch_equals_one_document_at_a_time():
    batch = q.signals_batch(MIXED)
    assert list(batch) == list(q.SIGNAL_NAMES)
    for name, values in batch.items():
        assert values.dtype == np.float32 and len(values) == len(MIXED)
        assert not np.isnan(values).any()
    for i, text in enumerate(MIXED):
        one = sig(text)
        for name in q.SIGNAL_NAMES:
            assert batch[name][i] == pytest.approx(one[name], rel=1e-6, abs=1e-7), (i, name)


def test_chunking_does_not_change_values(monkeypatch):
    whole = q.signals_batch(MIXED)
    monkeypatch.setattr(q, "CHUNK_CHARS", 60)  # several chunks, some with one long text alone
    assert len(q._chunks(MIXED)) > 3
    chunked = q.signals_batch(MIXED)
    for name in q.SIGNAL_NAMES:
        np.testing.assert_array_equal(whole[name], chunked[name], err_msg=name)


def test_words_must_spell_the_text():
    with pytest.raises(ValueError):
        q.doc_signals("我爱北京", ["我", "爱"])
    assert q.signals_batch([]) == {name: pytest.approx(np.zeros(0)) for name in q.SIGNAL_NAMES}


def test_given_words_are_used():
    # the caller's cut is used, not rjieba's: as two words there is one 2-gram (no repeat) -> 0;
    # as 8 characters, 我爱 爱北 北京 occur twice each (tie: the first, 我爱, at words 0 and 4) -> 4/8
    text = "我爱北京我爱北京"
    assert sig(text, ["我爱北京", "我爱北京"])["top2_word_cov"] == 0.0
    assert math.isclose(sig(text, list(text))["top2_word_cov"], 0.5, rel_tol=1e-6)


# --- the vectorised repetition statistics against plain Python (Gopher's definitions) -------------


def reference_repetition(text: str) -> dict[str, float]:
    """Gopher's repetition statistics written the obvious way, for comparison."""
    words = [w for w in q.cut(text) if any(c.isalnum() for c in w)]
    total = sum(map(len, words))
    out = {}
    for n in range(2, 11):
        grams: dict[tuple[str, ...], list[int]] = {}
        for i in range(len(words) - n + 1):
            grams.setdefault(tuple(words[i : i + n]), []).append(i)
        repeated = {g: at for g, at in grams.items() if len(at) > 1}
        if n <= 4 and repeated:  # the most frequent; ties: more characters, then first
            best = min(repeated, key=lambda g: (-len(repeated[g]), -len("".join(g)), repeated[g][0]))
            repeated = {best: repeated[best]}
        covered = {i + k for at in repeated.values() for i in at for k in range(n)}
        name = f"top{n}_word_cov" if n <= 4 else f"dup{n}_word_cov"
        out[name] = sum(len(words[i]) for i in covered) / total if total else 0.0
    visible = sum(not c.isspace() for c in text)
    lines = [ln.strip() for ln in text.split("\n")]
    seen, dup = set(), 0
    for ln in filter(None, lines):
        dup += sum(not c.isspace() for c in ln) if ln in seen else 0
        seen.add(ln)
    out["dup_line_char_frac"] = dup / visible if visible else 0.0
    blocks, block = [], []
    for ln in lines + [""]:
        if ln:
            block.append(ln)
        elif block:
            blocks.append(tuple(block))
            block = []
    paragraphs = blocks if len(blocks) >= 2 else [(ln,) for b in blocks for ln in b]
    seen, dup = set(), 0
    for p in paragraphs:
        dup += sum(not c.isspace() for c in "".join(p)) if p in seen else 0
        seen.add(p)
    out["dup_para_char_frac"] = dup / visible if visible else 0.0
    return out


def random_texts(n: int, seed: int) -> list[str]:
    """Texts from a small vocabulary, so n-grams, lines and paragraphs repeat by chance."""
    import random

    rng = random.Random(seed)
    vocab = ["我们", "爱", "北京", "天安门", "的", "了", "中国", "人民", "，", "。", "好", "abc", "12", "　", " "]
    texts = []
    for _ in range(n):
        lines = ["".join(rng.choice(vocab) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 8))]
        lines += [rng.choice(lines) for _ in range(rng.randint(0, 3))]  # repeated lines
        texts.append("\n".join(rng.choice(["", "\n"]) + ln for ln in lines))
    return texts


def test_repetition_matches_plain_python():
    texts = random_texts(300, seed=23)
    batch = q.signals_batch(texts)
    for i, text in enumerate(texts):
        for name, expected in reference_repetition(text).items():
            assert batch[name][i] == pytest.approx(expected, abs=1e-6), (name, text)


def test_url_matches_are_a_whole_text_search():
    # tried only 4 and 5 characters before each "://" (quality.contact._url_matches)
    import random

    from filters.quality.contact import _URL, _url_matches

    rng = random.Random(2)
    parts = [
        "http://a.com/x",
        "https://b.cn/?u=http://c.com",
        "HTTPS://D.COM",
        "://",
        "ttps://",
        "xhttp://",
        "http://",
        "https://x",
        "，",
        " ",
        "中文",
        "\n",
        "s",
        "h",
    ]
    texts = ["".join(rng.choice(parts) for _ in range(rng.randint(1, 20))) for _ in range(3000)]
    assert [[m.span() for m in _url_matches(t)] for t in texts] == [[m.span() for m in _URL.finditer(t)] for t in texts]
    assert sum(1 for t in texts for _ in _url_matches(t)) > 3000


def test_statistics_are_of_the_prose_not_the_code():
    """Issue 32: Markdown code counts neither as symbols nor as lines without punctuation: a page
    with fenced code and code spans gets the statistics of its prose."""
    prose = "安装之后，在终端里运行命令即可。\n默认读取当前目录下的配置文件，找不到时使用内置的默认值。"
    page = (
        "安装之后，在终端里运行命令即可。\n```python\nif a == b: {x[i] for i in range(10)}\n}\n}\n```\n"
        "默认读取当前目录下的配置文件，找不到时使用内置的默认值。"
    )
    got, want = sig(page), sig(prose)
    for name in ("symbol_ratio", "punct_ratio", "line_punct_frac", "short_line_frac", "dup_line_char_frac"):
        assert got[name] == pytest.approx(want[name]), name
    assert got["symbol_ratio"] == 0.0 and got["line_punct_frac"] == 1.0
    assert sig("```\nls -la\n```")["han_ratio"] == 0.0  # code alone: no prose


def test_markdown_markup_makes_no_separator_lines():
    """Headings (``##``), table pipes and delimiter rows are markup: the separator-line rule, meant
    for rules drawn across a page and menus, sees the words they mark."""
    page = (
        "## 安装\n\n用包管理器安装，安装完成后即可使用。\n\n## 参数\n\n| 参数 | 说明 |\n|------|------|\n"
        "| 端口 | 服务监听的端口号 |\n| 日志 | 日志文件所在的目录 |\n\n**注意：** 修改配置以后需要重启服务才能生效。"
    )
    assert sig(page)["separator_line_frac"] == 0.0
    assert sig("首页 | 新闻 | 体育 | 娱乐\n" + NEWS)["separator_line_frac"] > 0.0  # a menu is still one


def test_table_rows_and_thematic_breaks_are_no_separator_lines():
    """Issue 32: a table row whose code cells leave ``/`` between them, or whose cells are short, is
    a structure, not a line of decoration; ``---`` between sections is Markdown's thematic break.
    A line of ``━━━`` or ``====`` outside a table is still decoration."""
    table = (
        "## 运算符\n\n| 运算符 | 说明 | 示例 |\n|---|---|---|\n| `+` / `加上` | 加法 | `a + b` |\n"
        "| `-` / `减去` | 减法 | `a - b` |\n| `and` / `且` | 逻辑 / 运算 | `a and b` |\n\n"
        "以上运算符都可以用中文或者符号书写，两种写法完全等价。"
    )
    got = sig(table)
    assert got["separator_line_frac"] == 0.0
    assert got["short_line_frac"] == pytest.approx(1 / 6)  # the heading; the four rows are no short lines
    sections = "第一节讲安装，按照说明一步一步来。\n\n---\n\n第二节讲配置，修改文件以后重启。\n\n***\n\n第三节讲使用。"
    assert sig(sections)["separator_line_frac"] == 0.0
    drawn = sections.replace("---", "━━━━━━").replace("***", "======")
    assert sig(drawn)["separator_line_frac"] == pytest.approx(2 / 5)
