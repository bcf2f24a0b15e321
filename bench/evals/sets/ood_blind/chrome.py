"""Chrome-only pages: what a crawler keeps when a page has no content of its own. One generator
per kind (navigation + footer, login wall, 404, cookie banner, paywall, empty search), written
for this set; each returns ``(title, text)``.
"""

from __future__ import annotations

import random

SITES = (
    "新知网",
    "城市生活网",
    "优选商城",
    "读书频道",
    "科技前沿",
    "健康之家",
    "旅游攻略网",
    "汽车之窗",
    "财经观察",
    "教育在线",
    "美食天下汇",
    "家居装修网",
    "母婴社区",
    "体育快讯",
    "本地论坛",
)
NAV = (
    "首页",
    "新闻",
    "财经",
    "科技",
    "体育",
    "娱乐",
    "汽车",
    "房产",
    "教育",
    "旅游",
    "健康",
    "视频",
    "图片",
    "论坛",
    "专题",
    "直播",
    "社区",
    "商城",
    "下载",
    "关于我们",
)
FOOTER = (
    "关于我们",
    "联系我们",
    "广告服务",
    "招聘信息",
    "友情链接",
    "网站地图",
    "隐私政策",
    "用户协议",
    "意见反馈",
    "帮助中心",
    "版权声明",
    "合作伙伴",
    "投诉举报",
    "免责声明",
)


def _footer(rng: random.Random, site: str) -> list[str]:
    lines = [
        " | ".join(rng.sample(FOOTER, rng.randint(4, 9))),
        f"Copyright © {rng.randint(2005, 2020)}-{rng.randint(2021, 2026)} {site} 版权所有",
    ]
    if rng.random() < 0.7:
        lines.append(
            f"{rng.choice('京沪粤浙苏川鄂湘')}ICP备{rng.randint(10000000, 99999999)}号-{rng.randint(1, 9)}"
            f"  {rng.choice('京沪粤浙苏川鄂湘')}公网安备 {rng.randint(10**13, 10**14 - 1)}号"
        )
    if rng.random() < 0.4:
        lines.append(f"客服热线：400-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}  工作时间：9:00-18:00")
    return lines


def _nav(rng: random.Random) -> list[str]:
    items = rng.sample(NAV, rng.randint(6, 14))
    return [rng.choice((" | ".join(items), "  ".join(items), "\n".join(items)))]


def nav_footer(rng: random.Random) -> tuple[str, str]:
    site = rng.choice(SITES)
    lines = [site, "登录 | 注册", *_nav(rng)]
    if rng.random() < 0.5:
        lines.append(f"当前位置：首页 > {rng.choice(NAV)} > 正文")
    lines += ["热门标签：" + " ".join(rng.sample(NAV, 5))] if rng.random() < 0.5 else []
    return site, "\n".join(lines + ["返回顶部"] + _footer(rng, site))


def login_wall(rng: random.Random) -> tuple[str, str]:
    site = rng.choice(SITES)
    lines = [
        f"欢迎登录{site}",
        rng.choice(("手机号登录", "账号密码登录", "扫码登录")),
        "请输入手机号",
        "请输入验证码",
        "获取验证码",
        "登录",
        rng.choice(("忘记密码？", "找回密码")),
        "还没有账号？立即注册",
        "登录即表示同意《用户协议》和《隐私政策》",
        "其他登录方式：微信  QQ  微博",
    ]
    if rng.random() < 0.5:
        lines.insert(0, "该内容需要登录后查看")
    return f"登录 - {site}", "\n".join(lines + _footer(rng, site)[: rng.randint(1, 3)])


def not_found(rng: random.Random) -> tuple[str, str]:
    site = rng.choice(SITES)
    msg = rng.choice(
        (
            "抱歉，您访问的页面不存在或已被删除。",
            "404 Not Found",
            "页面走丢了~",
            "哎呀，这个页面找不到了！",
            "您要查看的内容已下架。",
        )
    )
    lines = [
        msg,
        rng.choice(("可能的原因：", "您可以：")),
        "1. 输入的网址有误",
        "2. 该页面已被移除",
        f"{rng.randint(3, 10)}秒后自动返回首页",
        "返回首页  |  返回上一页",
    ]
    rng.shuffle(lines[1:4])
    return rng.choice((f"404 - {site}", "页面不存在", "出错了")), "\n".join(_nav(rng) + lines + _footer(rng, site))


def cookie_banner(rng: random.Random) -> tuple[str, str]:
    site = rng.choice(SITES)
    lines = [
        rng.choice(("本网站使用Cookie", "我们重视您的隐私", "Cookie 设置")),
        rng.choice(
            (
                "我们使用Cookie来改善您的浏览体验、分析网站流量并提供个性化内容。",
                "为了向您提供更好的服务，本站会使用Cookie及类似技术。继续浏览即表示您同意我们使用Cookie。",
            )
        ),
        "了解更多",
        "接受全部",
        "仅必要Cookie",
        "管理偏好设置",
    ]
    if rng.random() < 0.5:
        lines += ["必要Cookie  始终启用", "分析Cookie  开/关", "广告Cookie  开/关", "保存设置"]
    return site, "\n".join(lines + _footer(rng, site)[:2])


def paywall(rng: random.Random) -> tuple[str, str]:
    site = rng.choice(SITES)
    lines = [
        rng.choice(("本文为会员专享内容", "订阅后阅读全文", "剩余内容需付费解锁")),
        f"开通会员，每月仅需{rng.randint(6, 30)}元",
        f"首月{rng.choice(('1元', '免费', '6元'))}体验，随时取消",
        "已有账号？登录",
        "立即开通",
        rng.choice(("会员权益：无广告阅读、独家专栏、离线下载", "支持微信、支付宝支付")),
    ]
    return f"付费阅读 - {site}", "\n".join(_nav(rng)[:1] + lines + _footer(rng, site)[:2])


def empty_search(rng: random.Random) -> tuple[str, str]:
    site = rng.choice(SITES)
    q = rng.choice(("二手房", "周末去哪玩", "电动车电池", "考研资料", "感冒", "手机推荐", "附近美食", "租房"))
    lines = [
        f"搜索“{q}”",
        "共找到0条结果",
        rng.choice(("抱歉，没有找到与您搜索相关的内容。", "暂无相关结果")),
        "建议：",
        "检查输入是否正确",
        "尝试更换关键词",
        "使用更常见的词语",
        "热门搜索：" + " ".join(rng.sample(NAV, 5)),
    ]
    return f"{q} - 搜索结果 - {site}", "\n".join(_nav(rng) + lines + _footer(rng, site))


KINDS = {
    "nav_footer": nav_footer,
    "login_wall": login_wall,
    "not_found": not_found,
    "cookie_banner": cookie_banner,
    "paywall": paywall,
    "empty_search": empty_search,
}


def chrome_documents(rng: random.Random, per_kind: int) -> list[dict]:
    return [
        # the set's source label from before the generator moved out of demo/: the set's bytes stay
        {"title": t, "text": x, "source": "demo.ood_blind.chrome", "family": kind}
        for kind, make in KINDS.items()
        for t, x in (make(rng) for _ in range(per_kind))
    ]
