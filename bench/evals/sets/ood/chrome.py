"""Pages that are only site furniture, 300-500 characters each, of five kinds: ``not_found``
(404), ``login_wall``, ``cookie_wall``, ``forum_shell`` ("回复可见", "该帖已被删除") and
``empty_list`` (a list or search page with no results). Each page is a header with a menu, the
kind's message, and a footer, as a text extractor returns them, one block a line."""

from __future__ import annotations

import random

CHROME_MIN_CHARS, CHROME_MAX_CHARS = 300, 500  # the brief's range for chrome-only pages
SITES = (
    "青禾生活网",
    "南山社区",
    "知行论坛",
    "百川资讯",
    "橙子家居网",
    "远山旅游网",
    "晨光教育网",
    "蓝鲸财经",
    "大河房产网",
    "小满美食网",
    "北辰汽车论坛",
    "云上读书会",
    "星火科技网",
    "绿野户外论坛",
    "长风招聘网",
)
MENUS = ("首页", "资讯", "论坛", "专题", "视频", "图片", "问答", "活动", "下载", "排行榜", "会员中心", "帮助")
FOOTER_LINKS = ("关于我们", "联系我们", "隐私政策", "用户协议", "网站地图", "意见反馈", "广告服务", "友情链接")
MESSAGES = {
    "not_found": (
        "抱歉，您访问的页面不存在或已被删除。",
        "错误代码：404",
        "可能的原因：网址输入有误、页面已过期或已被移除。",
        "您可以：返回首页｜返回上一页｜联系管理员",
        "页面将在5秒后自动跳转到首页。",
    ),
    "login_wall": (
        "登录后查看完整内容",
        "用户名或手机号",
        "密码",
        "记住我　忘记密码？",
        "登录　还没有账号？立即注册",
        "其他登录方式：扫码登录｜短信验证码登录",
        "登录即表示同意用户协议和隐私政策",
    ),
    "cookie_wall": (
        "我们使用Cookie来改善您的浏览体验、分析网站流量并提供个性化内容。",
        "继续浏览即表示您同意我们使用Cookie。",
        "接受全部　仅必要的Cookie　自定义设置",
        "您可以随时在隐私设置中更改您的选择。",
        "请启用JavaScript以正常显示本页面。",
    ),
    "forum_shell": (
        "该帖已被删除",
        "本帖最后由管理员于昨天编辑",
        "游客，如果您要查看本帖隐藏内容请回复",
        "回复可见",
        "楼主｜只看该作者｜倒序浏览｜阅读模式",
        "发表于三天前｜查看：0｜回复：0",
        "您需要登录后才可以回帖　登录｜立即注册",
        "返回列表　发新帖　回复",
    ),
    "empty_list": (
        "共找到0条结果",
        "没有找到与您的搜索相关的内容",
        "建议您：检查输入的文字是否有误；换一个关键词试试；减少筛选条件",
        "暂无数据",
        "排序：默认｜最新｜最热",
        "筛选：全部｜一周内｜一个月内｜一年内",
        "上一页　下一页　共0页",
    ),
}


def _header(rng: random.Random, site: str) -> list[str]:
    return [
        f"{site}　登录｜注册｜手机版",
        "｜".join(rng.sample(MENUS, rng.randint(6, 10))),
        f"当前位置：首页＞{rng.choice(MENUS)}＞正文",
    ]


def _footer(rng: random.Random, site: str) -> list[str]:
    return [
        "｜".join(rng.sample(FOOTER_LINKS, rng.randint(4, 7))),
        f"Copyright © 2008-2025 {site} 版权所有",
        f"京ICP备{rng.randint(10000000, 99999999)}号-{rng.randint(1, 5)}",
    ]


def chrome_page(rng: random.Random, kind: str) -> tuple[str, str]:
    """One page of ``kind`` between CHROME_MIN_CHARS and CHROME_MAX_CHARS characters (the header
    menu and the messages are drawn again until it fits)."""
    site = rng.choice(SITES)
    while True:
        body = list(MESSAGES[kind])
        lines = _header(rng, site) + body + [f"热门：{'｜'.join(rng.sample(MENUS, 5))}"] + _footer(rng, site)
        text = "\n".join(lines)
        while len(text) < CHROME_MIN_CHARS:  # pad with a second menu row, as a mega-footer has
            lines.insert(-3, "｜".join(rng.sample(MENUS + FOOTER_LINKS, 8)))
            text = "\n".join(lines)
        if len(text) <= CHROME_MAX_CHARS:
            return f"{body[0]} - {site}", text


def chrome_documents(rng: random.Random, per_kind: int) -> list[dict]:
    return [
        {"title": title, "text": text, "source": f"ood-generator:chrome:{kind}", "family": kind}
        for kind in MESSAGES
        for title, text in (chrome_page(rng, kind) for _ in range(per_kind))
    ]
