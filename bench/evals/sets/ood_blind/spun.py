"""Two spam families that read almost like prose: an article copied and synonym-spun to dodge
duplicate detection (with anchor keywords and a link pasted in), and machine-translated filler.
The base paragraphs are written for this set.
"""

from __future__ import annotations

import random
import re

from bench.evals.sets.ood_blind.obfuscate import contact_word, disguise, url

BASE = (
    "很多人在选择家用净水器的时候都会遇到一个问题，那就是不知道应该选择哪一种类型。其实，我们首先要了解自己家里的水质情况，"
    "然后再根据实际需要来决定。如果家里的水比较硬，那么就要选择具有软化功能的产品。",
    "孩子的学习习惯是在日常生活中慢慢养成的。家长要给孩子提供一个安静的学习环境，同时也要注意自己的言行，"
    "因为父母的影响是非常重要的。很多专家认为，陪伴比辅导更能提高孩子的学习效果。",
    "冬天到了，很多人都会出现皮肤干燥的问题。这个时候我们要注意多喝水，使用适合自己的护肤品，"
    "并且尽量减少长时间洗热水澡的次数。饮食方面，可以多吃一些富含维生素的水果和蔬菜。",
    "随着互联网的发展，越来越多的公司开始重视网络营销。一个好的网站不仅能够提高公司的知名度，"
    "还可以帮助客户更快地了解产品。因此，选择一家专业的建站公司是非常重要的。",
    "跑步是一项非常简单的运动，但是很多人因为方法不对而受伤。跑步前一定要做好热身，选择合适的跑鞋，"
    "并且根据自己的身体情况来安排时间和距离。坚持一段时间以后，你会发现身体有了明显的变化。",
    "装修房子是一件很麻烦的事情，从设计到施工，每一个环节都需要我们认真对待。在选择装修公司的时候，"
    "要多比较几家，看看他们以前的作品，同时也要注意合同里面的细节问题，避免后期产生纠纷。",
    "养猫之前，一定要想清楚自己是否有足够的时间和精力。猫咪虽然比较独立，但是也需要主人的陪伴和照顾。"
    "每天要给它准备干净的水和食物，定期打疫苗和驱虫，这样它才能健康地成长。",
)
# The replacements a spinner picks; several are wrong in context on purpose (问题 -> 成绩).
SYNONYMS = {
    "选择": ("拣选", "遴选", "抉择", "挑拣"),
    "问题": ("成绩", "题目", "疑问", "难题"),
    "非常": ("十分", "极其", "万分", "颇为"),
    "重要": ("紧要", "首要", "要紧", "主要"),
    "我们": ("咱们", "吾辈", "俺们"),
    "提高": ("进步", "晋升", "抬高", "增进"),
    "影响": ("作用", "熏陶", "波及"),
    "发展": ("开展", "成长", "进展"),
    "使用": ("运用", "动用", "利用"),
    "时间": ("光阴", "工夫", "时辰"),
    "效果": ("成效", "结果", "功效"),
    "公司": ("企业", "商号", "商行"),
    "孩子": ("小孩", "童子", "孩儿"),
    "生活": ("日子", "糊口", "活计"),
    "注意": ("留神", "当心", "在意"),
    "需要": ("需求", "须要", "必要"),
    "方法": ("办法", "途径", "手段", "伎俩"),
    "健康": ("安康", "康健", "健壮"),
    "帮助": ("协助", "扶助", "援手"),
    "身体": ("体格", "肉体", "身躯"),
    "明显": ("显著", "鲜明", "分明"),
    "一定": ("必然", "势必", "肯定"),
    "认真": ("当真", "仔细", "较真"),
    "干净": ("清洁", "洁净", "整洁"),
}
ANCHORS = ("净水器加盟", "少儿编程培训", "补水面膜批发", "网站建设", "跑步机厂家", "装修报价", "猫粮代理", "减肥茶")


def spin(text: str, rng: random.Random, rate: float) -> str:
    """Each synonym-table word replaced with probability ``rate`` by one of its spins."""
    pattern = re.compile("|".join(sorted(SYNONYMS, key=len, reverse=True)))
    return pattern.sub(lambda m: rng.choice(SYNONYMS[m.group()]) if rng.random() < rate else m.group(), text)


def spun_article(rng: random.Random) -> tuple[str, str]:
    anchor = rng.choice(ANCHORS)
    paras = [spin(p, rng, rng.choice((0.5, 0.8, 1.0))) for p in rng.sample(BASE, rng.randint(2, 5))]
    for _ in range(rng.randint(2, 6)):  # anchor text pasted into random sentences
        i = rng.randrange(len(paras))
        cut = rng.randrange(len(paras[i]))
        paras[i] = paras[i][:cut] + rng.choice((f"【{anchor}】", f"（{anchor}）", anchor)) + paras[i][cut:]
    paras.append(
        rng.choice(
            (
                f"本文来源：{url(rng)}  转载请注明出处。",
                f"更多{anchor}资讯请访问 {url(rng)}",
                f"{anchor}咨询请{contact_word('加我', rng)}{contact_word('微信', rng)}",
                f"标签：{anchor} {anchor}价格 {anchor}哪家好",
            )
        )
    )
    title = f"{anchor}_{rng.choice(('最新资讯', '行业新闻', '常见问题', '知识百科'))}_第{rng.randint(1, 9999)}篇"
    return title, "\n\n".join(paras)


MT_PIECES = (
    "这是非常重要的为了",
    "在那里是许多的方式",
    "它将使您的体验更加的",
    "我们的产品是最好的质量在",
    "请不要犹豫联系我们为",
    "作为一个结果的",
    "你可以采取优势的",
    "它是能够的提供",
    "为了使得你的生活简单",
    "在另一方面来说",
    "我们致力于提供解决方案的",
    "被设计为满足的需要",
    "无论您是否正在寻找",
    "这个将帮助你节省",
    "根据我们的研究表明那",
    "让我们采取看看在",
    "它是一个很好的想法对于",
    "你将不会后悔的",
    "点击这里为了更多的信息",
    "所有的顾客都是我们的家庭",
    "最好的价格保证在市场",
    "享受免费的送货对于订单超过",
)
MT_NOUNS = (
    "鞋子",
    "手表",
    "包包",
    "太阳眼镜",
    "运动服",
    "手机壳",
    "假发",
    "婚纱",
    "汽车零件",
    "LED灯",
    "瑜伽裤",
    "渔具",
)
MT_ENGLISH = ("cheap", "best", "free shipping", "high quality", "wholesale", "sale", "outlet", "online", "discount")


def mt_gibberish(rng: random.Random) -> tuple[str, str]:
    """Export-shop filler run through a poor translator: calques, English product words left in."""
    noun = rng.choice(MT_NOUNS)
    sents = []
    for _ in range(rng.randint(6, 30)):
        parts = rng.sample(MT_PIECES, rng.randint(2, 3))
        if rng.random() < 0.5:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice((noun, f"{rng.choice(MT_ENGLISH)} {noun}")))
        sents.append("".join(parts) + rng.choice(("。", "！", "。", "，", ".")))
    paras, i = [], 0
    while i < len(sents):
        n = rng.randint(2, 6)
        paras.append("".join(sents[i : i + n]))
        i += n
    title = f"{rng.choice(MT_ENGLISH)} {noun} {rng.choice(MT_ENGLISH)} - {noun}的最好的{rng.choice(('商店', '网站', '供应商'))}"
    return title, disguise("\n".join(paras), rng)
