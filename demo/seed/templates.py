"""Templates and word pools of the classifier seed data (``seed``): spam lines, ads, listings,
scams, forum and page furniture, and the helpers that fill them with fresh draws. Spam pools
extend the crawl's own (``inject``) with more services, cities and districts, so a model learns
the kind of page rather than the crawl's few templates."""

from __future__ import annotations

import random
import re

from demo.crawl.inject import SPAM_CITIES, SPAM_DISTRICTS, SPAM_SERVICES

SERVICES = SPAM_SERVICES + (
    ("家电维修", "jiadian"), ("婚庆策划", "hunqing"), ("驾校报名", "jiaxiao"), ("月嫂保姆", "yuesao"),
    ("物流托运", "wuliu"), ("汽车租赁", "zuche"), ("家教辅导", "jiajiao"), ("防水补漏", "fangshui"),
    ("除甲醛", "chujiaquan"), ("热水器维修", "reshuiqi"), ("宽带安装", "kuandai"), ("钢琴培训", "gangqin"))
CITIES = SPAM_CITIES + ("天津", "苏州", "郑州", "长沙", "青岛", "沈阳", "合肥", "济南", "福州", "昆明",
                        "厦门", "大连", "宁波", "无锡", "石家庄", "哈尔滨")
DISTRICTS = SPAM_DISTRICTS + ("江北", "高新", "经开", "滨湖", "历下", "鼓楼", "雁塔", "岳麓", "和平", "新城")
SURNAMES = "王李张刘陈杨赵黄周吴徐孙马朱胡郭何林罗高"
ROADS = ("人民", "解放", "建设", "中山", "长江", "和平", "文化")
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
PLANTED_LINES = ("已有{n}位顾客购买，好评率{r}%，{kw}", "{kw}：{contact}", "【广告】{kw}，{kw2}，详情{contact}",
                 "{kw}，点击链接 http://www.{slug}{n}.com", "推荐：{kw}，{kw2}，{contact}",
                 "{kw}！{kw2}！限时优惠，{contact}")
LISTING_LINES = (
    "{svc}：{phone}（{surname}师傅）服务区域：{district}", "【{svc}】{city}{district}上门服务，电话{phone}，微信同号",
    "{district}{rooms}室{halls}厅出租，{area}平米，月租{price}元，有意者请联系{phone}",
    "招聘{job}{n}名，包吃住，月薪{a}-{b}元，联系人：{surname}先生 {phone}",
    "出售二手{item}，九成新，{price}元，非诚勿扰，电话{phone}", "{svc}找{surname}师傅，{phone}，QQ：{qq}",
    "高价回收二手{item}，上门看货，现金结算，{phone}", "联系人：{surname}经理　手机：{phone}　QQ：{qq}　微信：{wx}")
LISTING_TITLES = ("{c}同城便民信息_{c}分类信息网", "{c}二手租房招聘信息_{c}同城",
                  "{c}免费发布信息_{c}生活服务电话大全")
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
# very repetitive pages: a short phrase said over and over, line after line
REPEATED = CHATTER + ("好好好", "赞赞赞", "支持支持", "来了来了", "冲冲冲", "666", "厉害了", "牛", "顶起",
                      "签到", "打卡", "灌水", "up", "路过看看", "顶顶顶", "啦啦啦", "好评", "求关注",
                      "互粉", "收藏了", "转发", "点赞", "楼主好人", "继续", "留名", "占楼")
USER_NAMES = ("书虫", "旅行者", "lucky", "dreamer", "ivy", "tom", "阿飞", "老猫", "sunny", "风之子", "数码控",
              "hotel_fan", "阿华", "小林", "jack", "echo")
FORUM_PREFIXES = ("【讨论】",) * 6 + ("Re: ", "求助：", "【分享】", "")  # the crawl's threads are 【讨论】
FURNITURE = ("点击查看全文", "展开全文", "分享到：微博 微信 QQ空间", "上一篇 下一篇", "返回顶部", "[更多>>]",
             "责任编辑：{surname}编", "扫码关注我们", "本文来源于网络，如有侵权请联系删除", "热门推荐",
             "阅读({n}) 评论({m})", "发表于{y}年{mo}月{d}日")
NAV_TITLES = ("{section}_本站首页", "{section}频道", "{section}列表 第{n}页", "{section}_资讯中心")
SENTENCE_END = re.compile(r"[。！？][”’」』）]*")
FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


# --- filling them -------------------------------------------------------------------------------

def phone(rng: random.Random) -> str:
    """Mobile (in three spellings), landline or 400 number; sometimes in full-width digits."""
    roll = rng.random()
    if roll < 0.6:
        d = f"1{rng.choice('3456789')}{rng.randrange(10 ** 9):09d}"
        number = rng.choice((d, f"{d[:3]}-{d[3:7]}-{d[7:]}", f"{d[:3]} {d[3:7]} {d[7:]}"))
    elif roll < 0.8:
        area = rng.choice(("010", "021", "020", "0755", "0571", "028", "027", "025", "029", "023"))
        number = f"{area}-{rng.randrange(10 ** 7, 10 ** 8)}"
    else:
        number = f"400-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}"
    return number.translate(FULL_WIDTH) if rng.random() < 0.15 else number


def handle(rng: random.Random) -> str:
    slug = rng.choice(SERVICES)[1]
    return rng.choice((f"{slug}{rng.randint(1, 999)}", f"wx{rng.randrange(10 ** 6, 10 ** 9)}",
                       f"{rng.choice(SURNAMES)}{rng.choice('小大阿')}{rng.randint(10, 99)}"))


def contact(rng: random.Random) -> str:
    template = rng.choice(("微信：{wx}", "电话：{phone}", "QQ：{qq}", "热线：{phone}", "加v：{wx}"))
    return template.format(wx=handle(rng), phone=phone(rng), qq=rng.randrange(10 ** 5, 10 ** 10))


def fill(rng: random.Random, template: str, **fixed) -> str:
    """template with every field the spam templates use drawn fresh (``fixed`` wins)."""
    (svc, slug), city = rng.choice(SERVICES), rng.choice(CITIES)
    fields = dict(svc=svc, slug=slug, city=city, city2=rng.choice(CITIES), city3=rng.choice(CITIES),
                  district=rng.choice(DISTRICTS), district2=rng.choice(DISTRICTS), kw=city + svc,
                  phone=phone(rng), surname=rng.choice(SURNAMES), n=rng.randint(2, 99),
                  road=rng.choice(ROADS), qq=rng.randrange(10 ** 5, 10 ** 10), wx=handle(rng),
                  contact=contact(rng), rooms=rng.randint(1, 4), halls=rng.randint(1, 2),
                  area=rng.randint(30, 160), price=rng.randrange(200, 9000, 50), job=rng.choice(JOBS),
                  item=rng.choice(ITEMS), a=rng.randrange(3000, 6000, 500),
                  b=rng.randrange(6000, 12000, 500))
    return template.format(**(fields | fixed))


def furniture(rng: random.Random) -> str:
    return rng.choice(FURNITURE).format(surname=rng.choice(SURNAMES), n=rng.randint(10, 9999),
                                        m=rng.randint(0, 99), y=rng.randint(2008, 2025),
                                        mo=rng.randint(1, 12), d=rng.randint(1, 28))


def user(rng: random.Random) -> str:
    """A forum user name, never a spam handle (service slugs are spam's)."""
    return rng.choice((f"用户{rng.randrange(10 ** 4, 10 ** 8)}",
                       f"{rng.choice(USER_NAMES)}_{rng.randint(1, 999)}",
                       f"{rng.choice(SURNAMES)}小{rng.choice('猫狗鱼熊')}"))


def day(rng: random.Random) -> str:
    return f"20{rng.randint(8, 25):02d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
