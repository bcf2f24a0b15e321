"""Each PanGu-α §3.1.1 rule: the reason it gives on a positive case, and that it keeps a negative one."""

from __future__ import annotations

from dataclasses import replace

import pytest

from filters.pangu import rules
from filters.pangu import transforms as tf
from filters.pangu.config import RulesConfig
from filters.pangu.pipeline import Cleaner
from filters.text import chars as tx
from filters.text import markdown as md
from filters.text.keywords import KeywordList, KeywordMatcher
from tests.crawl_fixture import P

NEWS = P[0] + "\n" + P[1] + "\n" + P[2]
NAV = RulesConfig().navbar


@pytest.fixture(scope="module")
def cleaner():
    return Cleaner(RulesConfig())


def test_han_ratio_rule():
    assert rules.low_han_ratio(tx.text_stats(NEWS), 0.6) == rules.KEEP
    mixed = "本文介绍 " + "the quick brown fox jumps over the lazy dog " * 5
    assert rules.low_han_ratio(tx.text_stats(mixed), 0.6) == (False, "low_han_ratio")
    # Punctuation and symbols are neither Chinese nor foreign, and a Latin word is one unit of
    # writing: a dictionary entry (pinyin, ①, brackets, and the wave dash ～ standing in for the
    # headword, GB/T 15834's 连接号) is 18 Han of its 21 units (diū is one, ① and ② one each), 86 %,
    # though 18 of 34 visible characters (53 %).
    entry = "丢（diū）　①遗失；失去：钱包～了。～了工作。②扔：不要随地～果皮。"
    stats = tx.text_stats(entry)
    assert (stats.visible, stats.han, stats.punct, stats.written) == (34, 18, 11, 21)
    assert stats.han_ratio == pytest.approx(18 / 21) and rules.low_han_ratio(stats, 0.6) == rules.KEEP
    assert tx.text_stats("。，！★").han_ratio == 0.0  # punctuation and symbols only: nothing Chinese
    assert tx.text_stats("电话13313334789 " * 3).han_ratio == pytest.approx(6 / 39)  # digits count, each


def test_min_length_rule():
    assert rules.too_short(tx.text_stats(NEWS), 150) == rules.KEEP
    assert rules.too_short(tx.text_stats(NEWS[:149]), 150) == (False, "too_short")
    # whitespace does not count toward the 150 characters
    assert rules.too_short(tx.text_stats(" \n ".join(NEWS[:140])), 150) == (False, "too_short")


# Two Tang quatrains (public domain) as a web page prints them: a theme, then title, poet, lines.
POEMS = (
    "思乡主题诗词\n\n《静夜思》\n李白\n床前明月光，\n疑是地上霜。\n举头望明月，\n低头思故乡。\n\n"
    "《登鹳雀楼》\n王之涣\n白日依山尽，黄河入海流。\n欲穷千里目，更上一层楼。"
)


@pytest.mark.parametrize(
    "text",
    [
        POEMS,
        "《春晓》\n孟浩然\n春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。",  # a quatrain on one line
        "水调歌头\n明月几时有？把酒问青天。\n不知天上宫阙，今夕是何年。\n转朱阁，低绮户，照无眠。",  # a ci
    ],
)
def test_verse_is_verse(text):
    assert rules.verse(text)


@pytest.mark.parametrize(
    "text",
    [
        # a review: clauses of every length run into one line
        "内存太小_用户评价\n内存太小，没装系统，蓝牙也没有，芯片组太烂啦！双通道内存都不支持！",
        "用户评价\n内存太小，没装系统，蓝牙也没有，芯片组太烂啦！\n屏幕不错，声音很大，电池还行，发货也挺快。",
        # an advert: a header line with punctuation inside, digits in the clauses
        "考研包过，不过全额退款\n不用考试，直接拿证，全国通用。\n往年学员反馈截图：考研485分、考研558分\n先考试后付款。",
        "加微信领红包\nvx：abc123，\n日赚三百元，\n在家可做，\n名额有限！",
        NEWS[:140],  # prose: long clauses
        "春眠不觉晓，处处闻啼鸟。",  # fewer than four clauses
    ],
)
def test_verse_is_not_other_short_text(text):
    assert not rules.verse(text)


def test_min_length_spares_verse():
    stats = tx.text_stats(POEMS)
    assert 40 <= stats.visible < 150
    assert rules.too_short(stats, 150) == (False, "too_short")  # no exception asked for
    assert rules.too_short(stats, 150, POEMS, 40) == rules.KEEP
    assert rules.too_short(stats, 150, POEMS, stats.visible + 1) == (False, "too_short")  # shorter than the floor
    review = "内存太小_用户评价\n内存太小，没装系统，蓝牙也没有，芯片组太烂啦！双通道内存都不支持！"
    assert rules.too_short(tx.text_stats(review), 150, review, 40) == (False, "too_short")


def test_title_only_rule():
    assert rules.title_only("今日要闻\n", "今日要闻", 10, 64) == (False, "title_only")
    assert rules.title_only("今日要闻 今日要闻", "今日要闻", 10, 64) == (False, "title_only")
    assert rules.title_only("今日要闻\n" + NEWS, "今日要闻", 10, 64) == rules.KEEP
    assert rules.title_only("没有标题的短行", None, 10, 64) == (False, "title_only")
    assert rules.title_only("一句完整的话。", None, 10, 64) == rules.KEEP
    assert rules.title_only(NEWS, None, 10, 64) == rules.KEEP


def test_advertisement_rule():
    m = KeywordMatcher([KeywordList("advertisement", "t", ("加微信", "包邮"))])
    assert rules.advertisement(m.hits(NEWS + "加微信，全场包邮"), 2) == (False, "advertisement")
    assert rules.advertisement(m.hits(NEWS + "全场包邮"), 2) == rules.KEEP  # one stray keyword stays


def test_sensitive_rule_counts_distinct_terms_per_category():
    m = KeywordMatcher(
        [KeywordList("gambling", "t", ("网络赌场", "百家乐")), KeywordList("drugs", "t", ("冰毒", "摇头丸"))]
    )
    hits = m.hits("网络赌场网络赌场百家乐冰毒")
    assert {k: len(v) for k, v in hits.items()} == {"gambling": 2, "drugs": 1}
    assert rules.sensitive_words(hits, 3) == rules.KEEP  # 3 distinct: not MORE than 3
    assert rules.sensitive_words(m.hits("网络赌场百家乐冰毒摇头丸"), 3) == (False, "sensitive_words")
    # NFKC + lower case: full-width letters match the list's ASCII
    assert KeywordMatcher([KeywordList("x", "t", ("加qq",))]).hits("请加ＱＱ")["x"] == {"加qq"}


DRUG_LIST = "冰毒、海洛因、可卡因、摇头丸和氯胺酮"


def test_a_statute_naming_the_drugs_is_a_report_not_sensitive_text(cleaner):
    # our own sentences: the same five drug names, once in a statute's voice and once in a seller's
    statute = (
        "第一条　走私、贩卖、运输、制造" + DRUG_LIST + "等毒品的，依照刑法规定处五年以上有期徒刑，"
        "并处罚金；情节严重的，由人民法院判处十年以上有期徒刑或者无期徒刑，并处没收财产。" * 3
    )
    seller = (
        "本店长期供应" + DRUG_LIST + "，货源稳定，品质保证，量大从优，同城当面交易，"
        "老客户回购有优惠，新客户首单立减，欢迎各位老板前来咨询订购，价格公道童叟无欺。" * 3
    )
    assert cleaner(seller).reason == "sensitive_words"
    kept = cleaner(statute)
    assert kept.keep and sum(kept.sensitive_hits.values()) > 3  # counted, not removed
    # two markers are not a report (promotions borrow a word or two of the courts' vocabulary)
    assert cleaner(seller.replace("老客户", "依法经营，有期徒刑不怕，老客户")).reason == "sensitive_words"
    # terms stuffed into a report as clauses of their own are not what it reports on
    assert cleaner(statute.replace("并处罚金；", "并处罚金，冰毒，", 1)).reason == "sensitive_words"
    counted = Cleaner(RulesConfig(sensitive=replace(RulesConfig().sensitive, report_min_markers=0)))
    assert counted(statute).reason == "sensitive_words"  # 0: PanGu-α's count for every document


def test_special_symbols_are_removed():
    s, n = tf.remove_special_symbols("中\u200b文\ue000\x07内容★★★★结束\u0000", 2)
    assert s == "中文内容结束" and n == 8
    kept, n = tf.remove_special_symbols("版权所有©2026 单个★保留 1998-01-01", 2)
    assert kept == "版权所有©2026 单个★保留 1998-01-01" and n == 0
    ruled, _ = tf.remove_special_symbols("标题\n==========\n正文", 2)
    assert ruled == "标题\n\n正文"


def test_box_drawing_dash_is_punctuation():
    """ "──" written for "——" stays; a longer run of it is a rule drawn across the page."""
    assert tf.remove_special_symbols("他说──不，他喊道", 2) == ("他说──不，他喊道", 0)
    assert tf.remove_special_symbols("上文\n──────\n下文", 2) == ("上文\n\n下文", 6)
    assert tf.remove_special_symbols("甲──乙★★丙", 2) == ("甲──乙丙", 2)


def test_duplicate_paragraphs_are_removed():
    text = "第一段。\n第二段。\n 第一段。 \n第三段。\n第二段。"
    assert tf.remove_duplicate_paragraphs(text, 1) == ("第一段。\n第二段。\n第三段。", 2)
    assert tf.remove_duplicate_paragraphs("甲。\n乙。", 1) == ("甲。\n乙。", 0)


@pytest.mark.parametrize(
    "line",
    [
        "首页 | 新闻 | 体育 | 娱乐 | 财经",
        "当前位置：首页 > 新闻中心 > 正文",
        "首页 >> 国内新闻",
        "上一页 下一页 返回顶部",
        "新闻 体育 娱乐 财经 科技",
        "Home | News | Sports",
        "网站首页 关于我们 新闻动态 产品展示 在线留言",
        "上一章 目录 下一章",
        # the footer is the site's chrome too
        "Copyright © 2008-2025 知行论坛 版权所有",
        "京ICP备70756355号-3",
        "京公网安备 11010802020000号",
    ],
)
def test_navigation_lines_are_detected(line):
    assert tf.is_navigation_line(line, NAV.keywords, NAV.min_items, NAV.max_item_chars, NAV.max_keyword_line_chars)


@pytest.mark.parametrize(
    "line",
    [
        P[0],
        "记者从市政府获悉，新建的首页山隧道将于明年通车。",  # a keyword inside a sentence
        "The quick brown fox jumps over the lazy dog",  # English words, no separators
        "2026年11月21日",
        # issue 23: titles and glossary lines the rule used to delete
        "三国演义 第四十回 蔡夫人议献荆州　诸葛亮火烧新野",
        "第一回　宴桃园豪杰三结义　斩黄巾英雄首立功",
        "卷之一 宴桃园豪杰三结义",
        "大体/小体（dàtǐ/xiǎotǐ）",
        "第一百二十条 法律责任",
        "一、总则 适用范围 基本原则",
        "蔡夫人议献荆州 诸葛亮火烧新野 刘玄德携民渡江 赵子龙单骑救主",
        "（本文版权所有，转载请注明出处）",  # a sentence about copyright is text
    ],
)
def test_ordinary_lines_are_not_navigation(line):
    assert not tf.is_navigation_line(line, NAV.keywords, NAV.min_items, NAV.max_item_chars, NAV.max_keyword_line_chars)


def test_a_slash_inside_a_token_is_no_menu_separator():
    """A path, a date, Latin alternatives: one token, not menu items (issue 32: the rule took
    README and FAQ lines); a slash between Han items or beside a space still separates."""
    args = (NAV.keywords, NAV.min_items, NAV.max_item_chars, NAV.max_keyword_line_chars)
    tokens = "不需要学 Vue/React/Angular\nlog /var/log/dpkg.log\n答：5/5/2021\nTCP/IP/UDP"
    kept, removed = tf.remove_navigation_lines(tokens + "\n新闻/体育/娱乐\n首页 / 新闻 / 正文", *args)
    assert (kept, removed) == (tokens, 2)
    assert tf.is_navigation_line("新闻/体育/娱乐", *args) and not tf.is_navigation_line("Vue/React/Angular", *args)


def test_traditional_is_converted_to_simplified(cleaner):
    out = cleaner("這座小鎮以傳統手工藝聞名，家家戶戶都會製作竹編和陶器。\n" + P[2] + "\n" + P[3])
    assert out.converted and out.text.startswith("这座小镇以传统手工艺闻名，家家户户都会制作竹编和陶器。")
    assert out.keep


def test_pipeline_reason_order_and_stats(cleaner):
    noisy = "首页 | 新闻 | 体育\n" + P[0] + "\n" + P[0] + "\n★★★\n" + P[1] + "\n" + P[2]
    out = cleaner(noisy, title=None)
    assert out.keep and out.nav_lines_removed == 1 and out.dup_paragraphs_removed == 1 and out.symbols_removed == 3
    assert cleaner("标题页", title="标题页").reason == "title_only"
    assert cleaner("这是一句很短的话。").reason == "too_short"
    assert cleaner(POEMS).keep  # verse of 40 characters or more (length.verse_min_chars)
    assert cleaner("This page is English. " * 20).reason == "low_han_ratio"


def test_thresholds_come_from_config():
    strict = Cleaner(_with_min_chars(400))
    assert strict(NEWS).reason == "too_short"
    from jobs.config import load_config

    assert Cleaner(load_config(RulesConfig, None, ["length.verse_min_chars=0"]))(POEMS).reason == "too_short"


def _with_min_chars(n: int) -> RulesConfig:
    from jobs.config import load_config

    return load_config(RulesConfig, None, [f"length.min_chars={n}"])


# Issue 32, item 3: a Chinese technical page is prose around code. The Han ratio is of the prose,
# and no rule of the cleaning rewrites or removes code.
TECH_PAGE = """## 安装

本项目依赖 Python 3.10 以上版本。用下面的命令安装，然后在终端里运行 `mytool --help` 查看全部参数：

```bash
pip install mytool==1.2.0
cd /usr/local/bin
mytool --config ~/.mytool/config.toml --verbose
```

## 用法

在代码里导入模块，调用 `run()` 即可。默认读取当前目录下的配置文件，找不到时使用内置的默认值：

```python
class Runner:
    def __init__(self, path: str = "config.toml") -> None:
        self.path = path
        if self.path == "":
            raise ValueError("path is empty")
    def run(self) -> int:
        return 0
```

| 参数 | 说明 |
|------|------|
| `--config` | 配置文件路径 |
| `--verbose` | 输出详细日志 |
"""


def test_han_ratio_is_of_the_prose_outside_code():
    stats = tx.text_stats(TECH_PAGE)
    assert rules.low_han_ratio(stats, 0.6) == rules.KEEP, stats.han_ratio  # 0.20 counting the code
    assert stats.visible == tx.scan(TECH_PAGE).visible  # the length rule counts the code
    code_only = "```python\nimport os\nprint(os.getcwd())\n```\n\n~~~\nmake test\n~~~"
    assert tx.text_stats(code_only).han_ratio == 0.0  # code alone is not Chinese text
    assert md.prose("先看 `a == b` 再说") == "先看 再说"


def test_a_latin_word_is_one_unit_of_writing():
    faq = "Debian GNU/Linux 是 Linux 操作系统的一个发行版，由 Ian Murdock 在 1993 年创建，使用 dpkg 和 APT 管理软件包。"
    assert tx.text_stats(faq).han_ratio == pytest.approx(24 / 36)  # 24 Han, 8 Latin words, 4 digits (0.53 by character)
    assert rules.low_han_ratio(tx.text_stats(faq), 0.6) == rules.KEEP
    english = "本文介绍 " + "the quick brown fox jumps over the lazy dog " * 2
    assert rules.low_han_ratio(tx.text_stats(english), 0.6) == (False, "low_han_ratio")  # 4 of 22


def test_fenced_block_rules():
    """A fence never closed is no code block (a crawl's rule of backticks), nor is a block of
    Chinese prose (set in a box, it counts as the prose it is)."""
    lines = ["```", "x = 1", "```", "```", "一段被围起来的中文，仍然是正文，照样计算汉字比例。", "```", "```", "y"]
    assert md.code_lines(lines) == [True, True, True, False, False, False, False, False]
    assert md.code_lines(["```", "如果 i 等于 2 则", "  输出 i", "```"]) == [True] * 4  # Chinese keywords: code


def test_special_symbol_rule_leaves_code_alone(cleaner):
    out = cleaner(TECH_PAGE)
    for code in ("```python", "def __init__(self", 'if self.path == "":', "~/.mytool/config.toml"):
        assert code in out.text, code
    # outside code the rule still removes decoration (the stars, the underscores of a bare
    # __init__), not the code span
    text, removed = tf.remove_special_symbols("正文★★★★\n`**kwargs` 与 __init__", 2)
    assert (text, removed) == ("正文\n`**kwargs` 与 init", 8)


def test_navigation_and_duplicate_rules_leave_code_alone(cleaner):
    page = TECH_PAGE + "\n```sh\nif [ -f a ]; then\n  echo a\nfi\nif [ -f b ]; then\n  echo b\nfi\n```\n"
    out = cleaner(page)
    assert out.text.count("\nfi\n") == 2 and out.dup_paragraphs_removed == 0
    assert "cd /usr/local/bin" in out.text and out.nav_lines_removed == 0
    assert not tf.remove_navigation_lines("运行 `cd /usr/local/bin` 进入目录", NAV.keywords, 3, 8, 40)[1]
    assert tf.remove_navigation_lines("首页 | 新闻 | 体育 | 娱乐", NAV.keywords, 3, 8, 40)[1] == 1


TABLES = """## 命令

| 命令 | 说明 |
|------|------|
| 运行 | 启动服务，监听默认端口 |
| 停止 | 关闭服务并释放端口 |

## 配置项

| 命令 | 说明 |
|------|------|
| 端口 | 服务监听的端口号，默认八千 |
| 日志 | 日志文件所在的目录 |
"""


def test_tables_are_neither_duplicated_paragraphs_nor_decoration(cleaner):
    """A table repeats its header and draws its delimiter row with dashes: both stay."""
    out = cleaner(TABLES + "\n" + NEWS)
    assert out.text.count("| 命令 | 说明 |") == 2 and out.dup_paragraphs_removed == 0
    assert out.text.count("|------|------|") == 2
    assert md.prose("| 端口 | 默认八千 |\n|---|---|\n| a | b |") == "端口 默认八千\n\na b"


def test_a_double_spaced_table_is_a_table():
    """A page turned into text with blank lines after every block spaces its table rows too (a
    README of benchmark figures): the same table, the blank lines no rows; three blank lines
    apart, or a pipe line after a paragraph, is no table."""
    rows = ["| 词语 | 相似度 |", "|---|---|", "| 轿车 | 0.82 |", "| 宝石 | 0.83 |"]
    for gap in (1, 2):
        lines = ("\n" * (gap + 1)).join(rows)
        assert md.prose_rows(lines)[1] == [i * (gap + 1) for i in range(4) if i != 1], gap
        assert tx.text_stats(lines).han_ratio == 1.0  # the figures of its cells are data
    assert md.prose_rows("\n\n\n\n".join(rows))[1] == []
    assert md.prose_rows("说明文字\n\n| a | b |\n说明")[1] == []


def test_date_and_time_stamps_are_no_units_of_writing():
    """A forum thread's headers carry a stamp per post: notation, not foreign text. Phone numbers
    are digits that count."""
    thread = "".join(f"书虫{n} 发表于 2022-12-{n:02d} 23:{n:02d}\n云想衣裳花想容。\n" for n in range(10, 16))
    assert rules.low_han_ratio(tx.text_stats(thread), 0.6) == rules.KEEP  # 0.46 counting the stamps
    assert tx.text_stats("晚风 2024/1/5 电话13313334789").han_ratio == pytest.approx(4 / 15)


def test_stamp_spans_are_the_stamp_pattern_matches():
    """``stamp_spans`` (STAMP matched only at separators between digits) finds what
    ``STAMP.finditer`` finds, on fuzz of digits and separators."""
    import random

    rng = random.Random(0)
    texts = ["".join(rng.choice("0123456789-/.: T年x\n") for _ in range(rng.randint(1, 40))) for _ in range(20000)]
    texts += ["发表于 2022-12-16 23:38", "12022-12-16", "1:2:3:4", "2024.1.5 与 3.5 和 10:30:15"]
    for t in texts:
        assert [(a, b) for a, b, _ in tx.stamp_spans(t)] == [m.span() for m in tx.STAMP.finditer(t)], t


@pytest.mark.parametrize(
    "line",
    [
        "按精确标题、唯一 ID 前缀或完整 Thread ID 直接导出",  # Latin words set off by spaces
        "`fix` 会把 `threads` 表中所有行的 `model_provider` 和 `model` 更新为 `config.toml`",  # code spans
        "确认后按标题或 Thread ID 克隆：",  # it introduces what follows
        "- 自动生成 CLI 命令行",  # a list item's bullet is no menu item
        "- 🌍 跨境访问 - 访问国外资源",  # nor are an icon and a dash
        "      <br><b>多线对比图</b>",  # nor HTML tags
    ],
)
def test_mixed_chinese_and_english_lines_are_not_menus(line):
    assert tf.remove_navigation_lines(line, NAV.keywords, 3, 8, 40)[1] == 0
    assert tf.remove_navigation_lines("新闻 News 联系 科技 汽车", NAV.keywords, 3, 8, 40)[1] == 1  # a menu still is
    assert tf.remove_navigation_lines("🏠 首页 📰 新闻 ⚽ 体育 🎬 娱乐", NAV.keywords, 3, 8, 40)[1] == 1


def test_markdown_headings_are_titles(cleaner):
    """A heading's ``###`` is its syntax, not a decorative run, and a heading is no menu; a line of
    ``#####`` is still a rule and goes."""
    out = cleaner("### Q: 编译为 EXE 失败\n#####\n" + NEWS)
    assert out.text.startswith("### Q: 编译为 EXE 失败\n") and "#####" not in out.text
    assert out.nav_lines_removed == 0
