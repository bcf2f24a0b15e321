"""Pieces of ordinary pages the seed's crawl-like ham is dressed in (``demo.seed.pages``): forum
furniture, replies and user names. Nothing here is spam; the seed's spam has its own pools
(``demo.seed.spam_words``)."""

from __future__ import annotations

import random
import re

SURNAMES = "王李张刘陈杨赵黄周吴徐孙马朱胡郭何林罗高"
CHATTER = (
    "顶",
    "沙发",
    "mark一下",
    "楼主说得对",
    "同问",
    "路过",
    "支持一下",
    "+1",
    "哈哈哈哈哈",
    "求链接",
    "已收藏",
    "坐等更新",
    "我也是这么觉得的",
    "楼上正解",
    "不明觉厉",
    "前排围观",
    "说得好有道理啊",
    "同感！！",
    "这个真的不好说",
    "谢谢分享",
    "帮顶",
    "有人知道吗？急",
    "呵呵",
    "已阅",
)
USER_NAMES = (
    "书虫",
    "旅行者",
    "lucky",
    "dreamer",
    "ivy",
    "tom",
    "阿飞",
    "老猫",
    "sunny",
    "风之子",
    "数码控",
    "hotel_fan",
    "阿华",
    "小林",
    "jack",
    "echo",
)
FORUM_PREFIXES = ("【讨论】",) * 6 + ("Re: ", "求助：", "【分享】", "")  # the crawl's threads are 【讨论】
SENTENCE_END = re.compile(r"[。！？][”’」』）]*")


def user(rng: random.Random) -> str:
    """A forum user name."""
    return rng.choice(
        (
            f"用户{rng.randrange(10**4, 10**8)}",
            f"{rng.choice(USER_NAMES)}_{rng.randint(1, 999)}",
            f"{rng.choice(SURNAMES)}小{rng.choice('猫狗鱼熊')}",
        )
    )


def day(rng: random.Random) -> str:
    return f"20{rng.randint(8, 25):02d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
