"""Spam pages, one generator per family, written for this set without any keyword list.

Each family function takes an rng and returns ``(title, text)``; ``spam_documents`` draws
``per_family`` pages of each. Lengths, layouts and obfuscations (``obfuscate``) vary per page.
The auto-spun and machine-translated families live in ``spun``.
"""

from __future__ import annotations

import random

from bench.evals.sets.ood_blind import spun
from bench.evals.sets.ood_blind.obfuscate import (
    contact_word,
    disguise,
    fullwidth_digits,
    handle,
    phone,
    split_chars,
    url,
)

CITIES = (
    "北京",
    "上海",
    "广州",
    "深圳",
    "成都",
    "重庆",
    "杭州",
    "武汉",
    "西安",
    "南京",
    "天津",
    "苏州",
    "郑州",
    "长沙",
    "东莞",
    "沈阳",
    "青岛",
    "合肥",
    "佛山",
    "宁波",
    "昆明",
    "福州",
    "无锡",
    "厦门",
    "哈尔滨",
    "济南",
    "温州",
    "南宁",
    "长春",
    "泉州",
    "石家庄",
    "贵阳",
    "南昌",
    "金华",
    "常州",
    "惠州",
    "嘉兴",
    "太原",
    "徐州",
)
DISTRICTS = (
    "朝阳区",
    "浦东新区",
    "天河区",
    "南山区",
    "武侯区",
    "渝北区",
    "西湖区",
    "江汉区",
    "雁塔区",
    "鼓楼区",
    "滨海新区",
    "工业园区",
    "高新区",
    "经开区",
    "新城区",
    "老城区",
)
PRODUCTS = (
    "不锈钢水箱",
    "工业冷水机",
    "钢结构厂房",
    "防水涂料",
    "二手叉车",
    "办公家具",
    "led显示屏",
    "净化工程",
    "搬家公司",
    "开锁换锁",
    "空调维修",
    "装修公司",
    "驾校报名",
    "代理记账",
    "公司注册",
    "月嫂保姆",
    "管道疏通",
    "玻璃钢化粪池",
    "彩钢瓦",
    "集装箱房",
    "防火门",
    "货架",
    "电动伸缩门",
    "塑胶跑道",
    "监控安装",
)


def seo_doorway(rng: random.Random) -> tuple[str, str]:
    """City + product doorway page: the phrase repeated in every slot a template has."""
    city, prod = rng.choice(CITIES), rng.choice(PRODUCTS)
    kw = f"{city}{prod}"
    near = rng.sample(CITIES, 6)
    title = "_".join((kw, f"{kw}价格", f"{kw}厂家", f"{city}哪家{prod}好", "欢迎来电"))
    lines = [
        f"{kw}【{rng.choice(('厂家直销', '全城上门', '24小时服务', '价格优惠', '正规公司'))}】",
        f"{kw}哪家好？{kw}多少钱？{kw}电话：{phone(rng)}",
        f"本公司专业从事{kw}、{city}{rng.choice(DISTRICTS)}{prod}、{city}{prod}安装、{city}{prod}维修，"
        f"{kw}就找我们，{kw}价格实惠，{kw}质量保证。",
    ]
    for _ in range(rng.randint(2, 7)):
        lines.append(
            rng.choice(
                (
                    f"{kw}的优势：{prod}厂家直供，{prod}价格透明，{prod}售后无忧。",
                    f"选择{kw}要注意什么？首先要看{prod}厂家资质，其次看{prod}价格，最后看{prod}口碑。",
                    f"{city}{rng.choice(DISTRICTS)}{prod}|{city}{rng.choice(DISTRICTS)}{prod}|{city}{rng.choice(DISTRICTS)}{prod}",
                    f"热门搜索：{kw}报价 {kw}图片 {kw}排名 {kw}推荐 {kw}一站式",
                    f"{kw}，{kw}，{kw}——认准我们，{rng.randint(5, 30)}年老品牌！",
                )
            )
        )
    lines.append("服务区域：" + "、".join(f"{c}{prod}" for c in near))
    if rng.random() < 0.6:
        lines.append(
            f"{contact_word('联系', rng)}{contact_word('电话', rng)}：{phone(rng)}  地址：{city}市{rng.choice(DISTRICTS)}"
        )
    lines.append(f"相关推荐：{'  '.join(f'{c}{rng.choice(PRODUCTS)}' for c in rng.sample(CITIES, 5))}")
    return title, disguise("\n".join(lines), rng)


ITEMS = (
    "这款面膜",
    "这个充电宝",
    "这家店的螺蛳粉",
    "这件羽绒服",
    "这款蓝牙耳机",
    "这双运动鞋",
    "这个扫地机器人",
    "这款洗发水",
    "这个保温杯",
    "这款猫粮",
    "这家的酒店",
    "这套儿童绘本",
    "这款口红",
    "这个空气炸锅",
)
PRAISE = (
    "质量超级好",
    "物流很快，第二天就到了",
    "包装很精美",
    "性价比超高",
    "跟图片一模一样",
    "客服态度特别好",
    "用了一个星期效果明显",
    "老公说很好看",
    "已经回购第三次了",
    "闭眼入不会错",
    "颜值在线",
    "完全超出预期",
    "朋友都问我在哪买的",
    "五星好评！",
    "好评好评好评",
    "非常满意，下次还来",
)


def fake_review(rng: random.Random) -> tuple[str, str]:
    """A review farm: many 'buyers' saying the same thing with a rebate hint at the end."""
    item = rng.choice(ITEMS)
    lines = [f"{item}怎么样？真实买家评价（{rng.randint(2, 99)}万+条）"]
    for _ in range(rng.randint(6, 25)):
        user = (
            rng.choice("张王李赵刘陈杨黄周吴")
            + "**"
            + rng.choice(("1", "8", "a", "x", ""))
            + f"  {rng.choice('★★★★★') * 5}"
        )
        lines.append(
            user + "\n" + "，".join(rng.sample(PRAISE, rng.randint(1, 4))) + rng.choice(("！", "！！", "~", "👍", "。"))
        )
    if rng.random() < 0.7:
        lines.append(
            rng.choice(
                (
                    f"晒图好评返现{rng.randint(3, 20)}元，{contact_word('加我', rng)}{contact_word('微信', rng)}：{handle(rng)}",
                    f"想要同款的宝宝私信我，{contact_word('微信', rng)}号{handle(rng)}",
                    f"好评截图发给客服领红包🧧 {url(rng)}",
                )
            )
        )
    return f"{item}好不好用_{item}真实评价_口碑排行", disguise("\n".join(lines), rng)


COINS = ("BTC", "ETH", "SOL", "DOGE", "某新币", "MEME币", "平台币", "XX链", "元宇宙通证")


def invest_group(rng: random.Random) -> tuple[str, str]:
    """Crypto / stock 'teacher' group pump pages."""
    coin, pct = rng.choice(COINS), rng.randint(30, 900)
    teacher = rng.choice(("王老师", "李导师", "陈总", "币圈老韭菜", "K线女神", "量化大咖"))
    lines = [
        rng.choice(
            (
                f"{coin}即将暴涨{pct}%！内部消息提前布局",
                f"跟着{teacher}，一个月翻{rng.randint(2, 20)}倍",
                f"【免费】每日牛股推荐，胜率{rng.randint(85, 99)}%",
            )
        ),
        f"{teacher}带单{rng.randint(3, 15)}年，{rng.choice(('从不爆仓', '零回撤', '稳赚不赔', '只做确定性机会'))}。",
    ]
    for _ in range(rng.randint(3, 10)):
        lines.append(
            rng.choice(
                (
                    f"昨日喊单{coin}，今日已涨{rng.randint(10, 300)}%，群内学员{rng.randint(50, 999)}人全部止盈！",
                    f"截图：学员{rng.choice('ABCDEFG')}{rng.randint(1, 99)} 本金{rng.randint(1, 50)}万 → 现在{rng.randint(60, 900)}万",
                    f"名额有限，仅剩{rng.randint(1, 9)}个，满{rng.randint(100, 500)}人即关闭入群通道。",
                    f"不懂技术没关系，跟着操作就行，一天只需{rng.randint(5, 30)}分钟。",
                    f"合约{rng.randint(20, 125)}倍杠杆，小资金撬动大收益。",
                    f"内部渠道认购价{rng.randint(1, 9)}毛，上所开盘至少{rng.randint(10, 100)}倍。",
                    "错过比特币，别再错过这一次！",
                )
            )
        )
    lines.append(
        f"👉 入群{contact_word('加我', rng)}{contact_word('微信', rng)}：{handle(rng)}（备注：财富）"
        if rng.random() < 0.6
        else f"👉 下载APP注册领{rng.randint(50, 888)}U体验金：{url(rng)}"
    )
    return lines[0], disguise("\n".join(lines), rng)


SHOWS = (
    "庆余年",
    "繁花",
    "狂飙",
    "漫长的季节",
    "三体",
    "长相思",
    "莲花楼",
    "甄嬛传",
    "流浪地球",
    "封神",
    "斗罗大陆",
    "海贼王",
    "进击的巨人",
    "鬼灭之刃",
    "速度与激情",
    "复仇者联盟",
    "奥本海默",
    "孤注一掷",
    "消失的她",
)


def pirate_video(rng: random.Random) -> tuple[str, str]:
    """Streaming portals: episode lists, 'no ads' HD promises, mirror links."""
    show = rng.choice(SHOWS)
    n = rng.randint(12, 60)
    title = f"{show}全集在线观看_{show}高清完整版免费播放_{rng.choice(('蓝光', '1080P', '4K', '无删减'))}"
    lines = [
        f"{show}（{rng.randint(2015, 2025)}）",
        f"状态：更新至第{n}集  类型：{rng.choice(('剧情', '动作', '古装', '动漫', '科幻'))}",
        f"播放线路：{'  '.join(f'线路{i}' for i in range(1, rng.randint(3, 7)))}",
    ]
    if rng.random() < 0.7:
        start = rng.randint(1, max(1, n - 30))
        lines.append("  ".join(f"第{i:02d}集" for i in range(start, min(n, start + rng.randint(10, 40)) + 1)))
    lines += rng.sample(
        (
            f"{show}免费在线观看，无需会员，无广告，秒播不卡顿。",
            f"本站永久地址：{url(rng)}  备用地址：{url(rng)}，请收藏防止迷路。",
            "手机看片更方便，下载APP解锁全部VIP资源。",
            f"猜你喜欢：{'、'.join(rng.sample(SHOWS, 5))}",
            "本站资源均来自互联网，仅供学习交流。",
            f"热播榜：{'  '.join(f'{i}.{s}' for i, s in enumerate(rng.sample(SHOWS, 6), 1))}",
            f"{show}全集 {show}未删减版 {show}百度云 {show}迅雷下载 {show}网盘资源",
        ),
        rng.randint(3, 7),
    )
    return title, disguise("\n".join(lines), rng)


REMEDIES = ("祖传秘方", "纯中药配方", "进口特效药", "海外代购原研药", "宫廷秘制膏方", "高科技量子贴", "苗家古方")
AILMENTS = (
    "糖尿病",
    "高血压",
    "痛风",
    "失眠",
    "脱发",
    "颈椎病",
    "风湿骨痛",
    "肥胖",
    "近视",
    "鼻炎",
    "前列腺",
    "灰指甲",
)


def health_ads(rng: random.Random) -> tuple[str, str]:
    """Miracle cures and no-prescription pharmacies."""
    cure, ill = rng.choice(REMEDIES), rng.choice(AILMENTS)
    days = rng.randint(3, 30)
    lines = [
        rng.choice(
            (
                f"{ill}有救了！{cure}{days}天见效",
                f"{ill}患者必看：医院不会告诉你的{cure}",
                f"{split_chars(ill, rng)}克星，{cure}，无效全额退款",
            )
        ),
        f"{rng.choice(('张大爺', '李阿姨', '王先生', '刘女士'))}，{rng.randint(45, 78)}岁，患{ill}{rng.randint(3, 20)}年，"
        f"用了{cure}{days}天，{rng.choice(('指标全部正常', '彻底断根', '再也没复发', '医生都惊呆了'))}。",
    ]
    for _ in range(rng.randint(2, 8)):
        lines.append(
            rng.choice(
                (
                    f"无需处方，{contact_word('微信', rng)}下单，顺丰包邮，隐私发货。",
                    f"原价{rng.randint(300, 2000)}元，今日特价{rng.randint(39, 299)}元，买{rng.randint(2, 3)}送{rng.randint(1, 2)}！",
                    "不打针、不吃药、不手术，纯天然无副作用。",
                    f"已帮助{rng.randint(1, 99)}万患者摆脱{ill}困扰。",
                    f"某某医学院{rng.choice(('教授', '博士', '老专家'))}{rng.randint(30, 50)}年研究成果。",
                    f"咨询热线：{phone(rng)}（{rng.choice(('24小时', '免费', '专家在线'))}）",
                    f"仅限前{rng.randint(20, 200)}名，抓紧抢购👉{url(rng)}",
                )
            )
        )
    return lines[0], disguise("\n".join(lines), rng)


EXAMS = (
    "四六级",
    "考研",
    "教师资格证",
    "会计初级",
    "一建",
    "二建",
    "驾照科目一",
    "公务员",
    "雅思",
    "计算机二级",
    "成人高考",
    "自考",
    "护士资格证",
    "消防工程师",
)


def exam_cert(rng: random.Random) -> tuple[str, str]:
    """Exam answers before the exam, certificates without the exam."""
    exam = rng.choice(EXAMS)
    year = rng.randint(2021, 2026)
    lines = [
        rng.choice((f"{year}年{exam}真题答案提前获取", f"{exam}包过，不过全额退款", f"{exam}证书代办，学信网可查")),
        rng.choice(
            (
                f"考前{rng.randint(1, 3)}天出答案，考场{rng.choice(('耳机', '手表', '橡皮'))}接收，稳过。",
                f"内部渠道，保证{rng.randint(95, 100)}%准确率。",
                "不用考试，直接拿证，全国通用。",
            )
        ),
    ]
    for _ in range(rng.randint(2, 7)):
        lines.append(
            rng.choice(
                (
                    f"已有{rng.randint(300, 9000)}名学员顺利通过{exam}。",
                    f"{exam}押题卷+答案 打包价{rng.randint(88, 999)}元",
                    f"办理各类证件：学历、资格证、{exam}证书，{contact_word('联系', rng)}{contact_word('QQ', rng)}：{rng.randint(10000000, 999999999)}",
                    f"先考试后付款，{split_chars('诚信经营', rng)}。",
                    f"{exam}成绩修改、代考代刷，{contact_word('微信', rng)}：{handle(rng)}",
                    f"往年学员反馈截图：{'、'.join(f'{exam}{rng.randint(425, 650)}分' for _ in range(3))}",
                )
            )
        )
    return lines[0], disguise("\n".join(lines), rng)


TASKS = (
    "点赞",
    "关注抖音号",
    "看广告",
    "刷视频",
    "打字录入",
    "手工串珠",
    "拼多多砍价",
    "短视频评论",
    "App注册",
    "问卷调查",
)


def task_rebate(rng: random.Random) -> tuple[str, str]:
    """Click-to-earn and order-brushing recruitment."""
    task = rng.choice(TASKS)
    day = rng.randint(100, 800)
    lines = [
        rng.choice(
            (
                f"在家{task}，日赚{day}+，宝妈学生首选",
                f"招聘{task}兼职，一单一结，佣金{rng.randint(3, 50)}元",
                f"手机就能做！{task}一小时{rng.randint(30, 150)}元",
            )
        )
    ]
    for _ in range(rng.randint(3, 9)):
        lines.append(
            rng.choice(
                (
                    "零门槛，不收任何费用，多劳多得。",
                    f"做满{rng.randint(3, 10)}单升级VIP，佣金翻倍，垫付{rng.randint(200, 5000)}元秒返本金加提成。",
                    f"今日已结算：{'，'.join(f'{rng.choice(CITIES)}用户 +{rng.randint(20, 900)}元' for _ in range(3))}",
                    f"新人首单送{rng.randint(5, 30)}元，{contact_word('加我', rng)}领任务。",
                    f"下载{rng.choice(('XX赚', '趣多多', '任务宝', '省钱侠'))}App，邀请码{handle(rng)}",
                    f"不是骗子！已稳定运营{rng.randint(2, 8)}年，有意者{contact_word('联系', rng)}{contact_word('微信', rng)}{handle(rng)}",
                    f"{split_chars('日结', rng)}{split_chars('兼职', rng)}，名额有限",
                )
            )
        )
    return lines[0], disguise("\n".join(lines), rng)


COMMENT_OPENERS = (
    "写得真好，支持一下！",
    "楼主说得对",
    "mark一下",
    "学习了，感谢分享",
    "沙发",
    "顶顶顶",
    "路过~",
    "好文章，收藏了",
    "同意楼上",
    "有没有人一起的",
    "谢谢楼主",
    "来了来了",
)


def link_comments(rng: random.Random) -> tuple[str, str]:
    """A comment thread where most replies carry a link or a contact."""
    lines = [f"评论（{rng.randint(20, 3000)}）", ""]
    for _ in range(rng.randint(5, 20)):
        user = rng.choice(("游客", "匿名用户", "网友", "user", "小")) + str(rng.randint(100, 99999))
        body = rng.choice(COMMENT_OPENERS)
        r = rng.random()
        if r < 0.55:
            body += rng.choice(
                (
                    f" 推荐个好地方 {url(rng)}",
                    f" 我在这里找到的 → {url(rng)}",
                    f" 需要资料的{contact_word('加我', rng)}{contact_word('QQ', rng)}{rng.randint(10000000, 999999999)}",
                    f" 福利在这里：{url(rng)} 速度",
                    f" {fullwidth_digits(str(rng.randint(100, 999)))}元兑换码 {url(rng)}",
                )
            )
        lines.append(f"{user}：{body}")
        lines.append(f"{rng.randint(1, 59)}分钟前  回复  赞({rng.randint(0, 99)})")
    return "网友评论", disguise("\n".join(lines), rng)


FAMILIES = {
    "seo_doorway": seo_doorway,
    "fake_review": fake_review,
    "invest_group": invest_group,
    "pirate_video": pirate_video,
    "health_ads": health_ads,
    "exam_cert": exam_cert,
    "task_rebate": task_rebate,
    "link_comments": link_comments,
    "spun_article": spun.spun_article,
    "mt_gibberish": spun.mt_gibberish,
}


def spam_documents(rng: random.Random, per_family: int) -> list[dict]:
    docs = []
    for family, make in FAMILIES.items():
        for _ in range(per_family):
            title, text = make(rng)
            # the set's source label from before the generator moved out of demo/: the set's bytes stay
            docs.append({"title": title, "text": text, "source": "demo.ood_blind.spam", "family": family})
    return docs
