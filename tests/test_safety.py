"""The safety layer (filters/quality/safety.py): per-category scores and verdicts on promotion pages and
on text that must be spared, hand-computed scores, the literal prefilter (filters/quality/safety_prefilter.py;
its parity with the one before issue 35: tests/test_safety_prefilter.py), user extensions, errors,
and the false-removal rate on People's Daily news. No Spark.

Every page below is ours, written for these tests (no text from bench/evals/sets/ood/ or data/ood/): promotion
pages in several wordings per category, which must be caught, and text that must be spared: news
about crackdowns that names the schemes and quotes their slogans, court judgments, a statute article
on gambling, encyclopedic, advice and health texts, novels with gambling or brothels in them, bank
and lottery news, an e-commerce ad. Pages that were written as held-out checks and are caught now
are here too; the held-out rates are in sensitive_words/README.md."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from filters.quality.safety import (
    CATEGORIES,
    PROMOTION,
    REPORTING,
    SAFETY_DIR,
    PatternError,
    SafetyConfig,
    SafetyScorer,
)
from filters.quality.safety_prefilter import leading, requirement
from filters.text.keywords import SENSITIVE_DIR, normalise, read_lists_dir

POSITIVES = {
    "gambling": [
        "【澳门新葡京】官方直营，信誉老牌平台，真人视讯、电子游艺、体育赛事、彩票游戏一站畅玩！新会员首存10"
        "0送100，每日返水高达1.8%，提款3分钟到账，大额无忧。猜大小、猜单双，一把回本！立即注册领取3"
        "8元彩金，备用网址：xpj888.com",
        "重庆时时彩精准计划群，导师一对一带单，每期计划准确率90%以上，稳赚不赔，助你轻松上岸！倍投方案免费"
        "送，定位胆、胆码每日更新。加群前先看近30期历史战绩，跟着下注就能赚，名额有限速来。",
        "香港六合彩内部资料大公开！本期一肖中特：马；平特一肖：猴；三码中特 12 24 36。老牌资料站十年"
        "信誉，每期必中，买特码就来我们这里。今晚开奖前最后更新，错过再等一期！",
        "世界杯竞猜火热进行中！皇冠体育提供亚盘、欧赔、大小球、滚球、串关全场投注，赔率全网最高。新用户充值即"
        "送58%，单笔存100元送18元，每周返水无上限，出款秒到。点击进入投注，边看球边赢钱！",
        "老友棋牌上线啦！炸金花、抢庄牛牛、百家乐、龙虎斗，真人在线对战，上分下分找客服，24小时秒出款。注册"
        "就送8元体验金，推荐好友再返佣30%。最新网址防封，线路检测，换域名不迷路！",
        "★金沙娱乐★ 亚洲顶级线上娱乐平台 ★ 真人百家乐 | 体育 | 电竞 | 彩票 ★ 新人专享：首笔"
        "充值最高赠送8888元 ★ VIP会员每日反水无上限 ★ 24小时在线客服 ★ 支持USDT、支付宝"
        "、微信充值 ★ 千万出款无忧",
        "兄弟们今天的推荐来了！英超曼城VS阿森纳，主胜让一球，稳稳拿下。昨天三中三全红，跟上的都吃肉了。想要"
        "精准推荐的进群，每天三场，带你回血！",
        "快乐十分、幸运28、加拿大28，玩法多样，1.98高赔率，秒结算。新人上分即返10%，日流水满1万再"
        "送188。官网下载APP，注册绑卡就能玩。",
        "欢迎来到永利皇宫线上官方站点！我们是菲律宾政府授权的正规平台，资金安全有保障。热门游戏：真人荷官百家"
        "乐、龙虎、骰宝，电子老虎机上千款，另有足球、篮球、电竞赛事竞猜。新会员专属福利：首次存款即享100%"
        "奖金，最高可得2888元，三倍流水即可提款。每周一还有亏损救援金，最高返还10%。客服全天在线，任何"
        "问题随时咨询。",
        "【今日推荐】德甲 拜仁慕尼黑VS多特蒙德 推荐：主队让一球半，大球2.5。上周推荐7中6，本月胜率超"
        "过85%，跟上的兄弟都赚翻了。专家团队每天分析上百场比赛，只推最稳的一场。想要每天收到推荐的朋友，关"
        "注公众号回复“推荐”进群，前三天免费体验，满意再付费。",
        "幸运飞艇免费计划，每期公开两码，历史回测准确率92%！北京赛车、极速快三、腾讯分分彩同步更新，专人2"
        "4小时盯盘。新手不知道怎么下注？导师手把手教你倍投技巧，小本金也能稳定盈利。已经有3000多位彩友跟"
        "着我们回本上岸，错过今天再等一年，扫码进群领取今日计划。",
        "2024最新棋牌大厅上线，斗牛、三公、十三水、跑得快应有尽有，所有房间真金白银对战，赢了随时兑换成现"
        "金打到支付宝。每天登录领取免费金币，连续签到7天额外赠送50元。还在等什么？邀请码8866，输入即得"
        "新手礼包，和全国玩家一起拼手气。",
        "亚洲杯火热开赛，XX体育为您提供全场次竞猜服务，单关、串关、角球、黄牌都能玩，最高赔率可达100倍。"
        "新用户存款100元，平台再送100元，周末加码返利3%。资金由第三方担保，提款5分钟到账，放心娱乐。"
        "官方APP已上架，搜索XX体育立即下载。",
        "威尼斯人线上娱乐官网_威尼斯人app下载_威尼斯人网址\n"
        "威尼斯人致力于为广大玩家打造公平、公正、公开的游戏环境，提供体育、真人、电子、捕鱼、彩票、棋牌六大游"
        "戏板块。平台已运营十年，千万资金担保，大额提款无需审核。新会员注册并完成首存，即可申请100%首存红"
        "利，最高18888元。VIP晋级奖励、生日礼金、每周红包等你来拿。",
        "【幸运28】加拿大28大神带飞，每天稳定盈利不是梦！\n"
        "很多人玩28总是输，是因为没有掌握技巧。我从事彩票分析八年，独创“单双大小”公式，连续一个月胜率保持"
        "在80%以上。现在免费公开部分思路，有兴趣的朋友可以加我微信交流，跟着我的节奏来，一个月回本不是问题"
        "。无论你之前输了多少，都有机会翻盘。",
        "球友必看！本赛季五大联赛精准预测，每场都有详细数据分析，包含让分、大小、比分、半全场四种玩法。上个月"
        "我们的推荐命中率高达86%，已有上千名会员跟单获利。开通会员即可查看每日推荐，月卡只要199元，季卡"
        "更优惠。另有高手私人订制服务，回报率惊人，名额有限。",
        "欧洲杯投注指南：本届赛事哪支球队最有可能夺冠？我们的分析团队给出了独家预测，并附上全部51场比赛的最"
        "佳投注方案。新用户首笔存款享双倍奖金，串关全中额外加奖20%，亏损还能申请保险返还。点击下方按钮立即"
        "开户，开启你的赢球之旅。",
    ],
    "loans": [
        "速借｜极速到账\n"
        "不用抵押不用担保，凭身份证即可借款，最高可借20万元。日息低至0.02%，随借随还，最快5分钟放款。"
        "黑户、征信花了也能下款，立即申请！",
        "急用钱？手头紧？钱多多钱包为您提供小额信用借款，无需面签，无需抵押，全程手机操作。额度高达50000"
        "元，当天审批当天到账，月息仅需0.8%。大数据花了也能借，点击下载借款app，测额度不影响征信。",
        "【新口子】今日放水！不查征信不看负债，芝麻分550以上秒批，借款额度最高3万，审核宽松，包下款。还款"
        "方式灵活，可分12期。需要的朋友扫码申请，名额有限。",
        "学生党、宝妈、上班族都能借！零抵押零担保，有身份证和银行卡就能贷，1分钟审批，10分钟到账。利息低至"
        "每天1元，借1万用一天只要2元。循环额度，提前还款无违约金。现在申请首借免息！",
        "个人信用贷款，无需资料，无需押金，闪电放款。逾期、负债高也可以批，日利率0.03%起，最高可贷20万"
        "。详情咨询在线客服，立即借钱。",
        "手机就能借钱的APP推荐：下载即可查看额度，审核通过后2小时内打款到银行卡。无论你是上班族还是个体户"
        "，只要年满18周岁，有手机号和身份证，就能申请5000到50000元。",
        "私人借款，当面放款，无需任何手续，额度1-10万，利息面议。征信不好、有逾期的朋友也可以联系，诚信为"
        "本，非诚勿扰。电话：138XXXXXXXX",
        "【XX分期】0门槛，0抵押，借多少用多少，按天计息，1000元日息仅0.3元！今日申请立享30天免息券，最快30秒出额度。",
        "还在为资金周转发愁吗？易借花是一款正规持牌的线上借款平台，额度最高20万，年化利率7.2%起，最长可"
        "分36期还款。只需三步：填写资料、刷脸认证、绑定银行卡，最快3分钟到账。不上门、不面签、不查工作单位"
        "，全程线上办理。现在注册还送188元新人红包，首期还款免息。",
        "私人放款，快速解决你的燃眉之急！不看征信不看流水，只要你有稳定收入就能借。小额5000到大额50万，"
        "当天放款，利息低、手续简单。学生、个体户、上班族、自由职业者均可申请。征信有问题、网贷逾期的也可以来"
        "问问，总有适合你的方案。微信同号：177XXXXXXXX",
        "网贷下款攻略：哪些口子今天还在放款？小编整理了本周最新的十个口子，不看负债、不查大数据，芝麻分600"
        "以上基本秒过。下款金额3000到20000不等，到账速度基本在半小时以内。申请前记得先测一下你的额度"
        "，避免频繁查询征信。点击下方链接立即申请。",
        "【官方通知】您已获得一笔最高50000元的备用金额度，年利率低，无需任何抵押，仅需身份证即可领取，额"
        "度有效期仅剩24小时，过期作废。点击链接完成实名认证，资金将在审核通过后直接打入您的银行卡。如非本人"
        "操作请忽略。",
        "做生意缺资金？我们专做个人和企业大额贷款，房产、车辆、保单、公积金均可贷，也可做纯信用，额度10万到"
        "500万，放款快利息低。不收任何前期费用，办不成不收钱。已经帮助上千位老板解决资金难题，欢迎来电详谈"
        "。",
        "学生贷款哪家强？在校大学生凭学生证就能借，额度500到8000元，最快当天到手，还款时间灵活，可以等"
        "有钱了再还。不用告诉家长，全程保密，同学都在用。下载APP，填写学校和专业就能测额度。",
        "闪电贷｜您的随身钱包\n"
        "急需用钱？闪电贷为您提供500元至10万元的小额信用借款服务，全程线上申请，无需抵押担保，3分钟完成"
        "审批，最快10分钟放款到账。支持随借随还，按日计息，日利率低至0.02%。只要您年满22周岁、有稳定"
        "收入，即可申请。已为超过2000万用户提供借款服务，安全有保障。",
        "专业代办各类贷款：信用贷、房抵贷、车抵贷、企业经营贷、装修贷。无论你征信花了、负债高、还是被银行拒过"
        "，都可以来找我们，我们有多家银行和金融机构合作渠道，帮你量身定制方案。审批快，额度高，利息低，成功后"
        "才收费。微信：daikuan888，电话同号，24小时在线。",
        "今天给大家分享几个好下款的平台，亲测有效！第一个是某某借，新用户额度普遍在5000左右，放款速度很快"
        "，我申请后半小时就到账了。第二个是某某花，对征信要求不高，有小逾期也能过。第三个适合学生党，凭身份证"
        "和学生证就能申请。需要的宝子们赶紧冲，额度有限先到先得。",
        "【借呗急用】您有一笔3万元借款额度待领取，最快1分钟到账，日息万三，可分12期还款。无需抵押担保，无"
        "需纸质材料，芝麻分550以上即可申请，快来看看你能借多少吧！回复TD退订。",
    ],
    "pornography": [
        "同城约炮交友平台，附近美女在线等你，学生妹、少妇、模特应有尽有，酒店上门服务，快餐500 包夜150"
        "0，全程无套路。加微信看照片，美女空降到你家门口。",
        "午夜福利视频每日更新！国产自拍、日韩无码、欧美高清在线观看，免费看片无需注册。VIP会员解锁全集，宅"
        "男福利站永久网址收藏不迷路。",
        "一夜情、裸聊、激情直播间，性感美女主播一对一私密表演，脱衣直播每晚十点开播。充值会员无限看，老司机都在这里。",
        "本地楼凤信息：莞式全套服务，兼职妹、外围女上门，包时800起，安全私密。找小姐就上我们网站，成人网站"
        "导航每日更新。",
        "精品成人小说连载：风骚少妇与邻居的做爱故事，巨乳人妻的秘密，每章都有啪啪啪情节，免费阅读全文，会员免"
        "费看完整版。",
        "深夜寂寞？点这里和附近的小姐姐视频聊天，真人在线，不穿衣服的那种，一分钟就能接通。新用户送30分钟免费体验。",
        "xx影视：最新日本AV、国产精品、网红主播私拍全集，每天更新500部，无需翻墙，手机在线看，VIP永久会员只要39元！",
        "成人专区每日更新：日韩高清无码、欧美精选、国产网红福利，全部免费在线观看。支持手机、平板、电脑多端播"
        "放，无广告无弹窗，加载速度快。收藏本站永久地址，防止走丢。注册会员即可解锁超清画质和独家资源，邀请好"
        "友还能获得免费观看天数。",
        "本工作室新到一批年轻妹子，全部十八到二十五岁，身材苗条皮肤白，服务热情，可上门可到店。价格透明：一次"
        "六百，包夜一千五，学生妹另议。全市酒店宾馆均可送达，半小时内到，先验人后付款，安全私密不留记录。有意"
        "者请加微信预约。",
        "寂寞的夜晚不想一个人？这里有上万名真实女生在线等你聊天，视频、语音随便选，想看什么就看什么。女主播都"
        "很放得开，私密房间一对一，尺度无上限。新用户注册即送100金币，可免费体验私聊功能。下载APP，今晚"
        "就不再孤单。",
        "【深夜档】全网最全的成人资源站，每天更新上百部高清视频，包括日韩、欧美、国产各类题材，支持在线播放和"
        "下载。本站不需要注册，点开就能看，记得收藏新网址，旧地址随时可能失效。想看更多精彩内容，请加入我们的"
        "电报频道。",
        "午夜剧场｜成人影院\n"
        "本站收录海量成人电影，涵盖日本无码、欧美激情、国产偷拍、主播热舞等分类，所有视频均可免费在线观看，无"
        "需下载播放器。每日更新，画质高清流畅。温馨提示：本站内容仅适合18岁以上成年人观看，请收藏永久域名，"
        "避免迷路。",
        "全国各地高端外围资源，模特、空姐、网红、大学生应有尽有，照片真实，可视频验证。提供包夜、一次、陪游等"
        "多种服务，酒店、公寓均可上门。价格从一千到一万不等，满意付款。需要的老板加微信发定位，三十分钟内安排"
        "到位，专业团队绝对保密。",
        "寂寞的夜晚，你需要一个懂你的人。这里有最热辣的美女主播，24小时不间断直播，大胆才艺表演，只要刷礼物"
        "就能看到你想看的。私人一对一包房，尺度由你决定。注册即送VIP体验卡，还等什么，赶快下载吧！",
    ],
    "fraud": [
        "招聘兼职刷单员，手机操作，在家就能做，日结200-500元，佣金10%起。先垫付后返款，一单一结，宝"
        "妈学生都可以。有意者添加客服微信：abc123，名额有限。",
        "代开各类发票：增值税专票、普票，点数低，可上网查验，真票保真。另办各类证件、刻章，出售身份证、驾驶证"
        "，联系QQ 12345678。",
        "信用卡套现、花呗套现、白条提现，费率低至0.6%，秒到账，安全无风控。另有银行卡四件套出售，跑分平台"
        "招募卡农，日入3000不是梦。",
        "【内部消息】荐股老师带你抓涨停，稳赚不赔，保本保息，年化收益50%以上，零风险！添加助理微信进群，每"
        "天免费领取3只翻倍牛股。会员费仅需998元，日赚2000轻松实现。",
        "恭喜您获得本次活动一等奖，奖金88888元！请先缴纳保证金500元及个人所得税，领取奖金后全额退还。"
        "点赞员兼职：关注抖音点赞，一单3元，日结，轻松月入5000。",
        "招聘网络客服，每天工作2小时，日薪300-800，无需经验，手机即可操作。入职前需缴纳198元培训费"
        "，培训后安排任务，工资当天结算。",
        "做淘宝补单员，一单赚5-20元，本金佣金秒返，新手也能月入过万。扫码添加导师，领取第一单任务。",
        "诚招线上兼职人员，不限年龄不限学历，有手机就能做。工作内容：帮商家浏览商品、下单、好评，提升店铺销量"
        "。每单佣金5到50元不等，做完立即返还本金和佣金，一天轻松赚三四百。名额有限，今日报名还送新手红包。"
        "报名请添加客服QQ：1234567，备注兼职。",
        "本公司长期提供各行业正规发票，增值税专用发票、普通发票、机打发票均可开具，票面真实可查，税点优惠，量"
        "大从优。另承接公司注册、代理记账、资质代办等业务。诚信经营十余年，欢迎来电咨询：138XXXXXXX"
        "X 王经理。",
        "区块链数字资产项目火热招募中！投资1000元起，每天固定收益2%，一个月回本，半年翻十倍。平台由海外"
        "知名基金背书，本金随时可提，绝无风险。推荐好友投资还能拿到三级返佣，躺着也能月入过万。名额仅剩最后5"
        "0个，赶快联系你的专属导师开户！",
        "足不出户日赚千元！只需一部手机，每天抽出一两个小时帮平台看广告、点赞、转发，即可获得丰厚回报。零投资"
        "零门槛，宝妈学生上班族都能做，收益当天提现。加入团队还能发展下级，躺着收取团队佣金。",
        "急招！抖音点赞员，在家手机操作，简单易上手，一个赞3元，一天做100个轻松赚300元。工作时间自由，"
        "宝妈、学生、上班族均可兼职，当天结算，绝无押金。添加接待员微信领取任务，前五单有新手奖励。每天仅招3"
        "0人，满即止。",
        "外汇黄金投资，专业导师一对一指导，每日收益稳定在3%-5%，月收益轻松翻倍。平台受国际金融机构监管，"
        "资金安全有保障，随时可提现。现在入金满1万送2000元体验金，推荐朋友还能获得10%的奖励。机会难得"
        "，错过再等一年，立即联系导师开户！",
    ],
}

NEGATIVES = {
    "gambling crackdown": (
        "本报讯 近日，某市公安局破获一起特大跨境网络赌博案，抓获犯罪嫌疑人56名，冻结涉案资金1.2亿元。经"
        "查，该团伙在境外架设赌博网站，开设百家乐、龙虎斗、体育竞猜等赌博项目，以“高额返水”“首充返利”为诱"
        "饵，吸引国内人员注册投注，并层层发展代理。警方提醒，网络赌博十赌九骗，广大群众切勿心存侥幸。目前，案"
        "件正在进一步侦办中。"
    ),
    "illegal lottery crackdown": (
        "记者从省公安厅获悉，今年以来全省共打掉私彩、赌球团伙37个。这些团伙借“六合彩”“时时彩”之名，在网"
        "络群组中兜售所谓“内部资料”“精准计划”，诱骗群众下注，不少人因此倾家荡产。公安机关提醒，境外彩票在"
        "我国境内销售均属违法，所谓“稳赚不赔”的计划全是骗局。"
    ),
    "loan-shark warning": (
        "针对近期高发的套路贷、校园贷问题，银保监会发布风险提示。一些不法网络借贷平台打着“无需抵押”“快速放"
        "款”的旗号，诱导学生和低收入群体借款，实际收取高额“砍头息”，年化利率远超法定上限，逾期后采取暴力催"
        "收。监管部门提醒消费者通过正规金融机构办理贷款，警惕虚假宣传。"
    ),
    "bank credit news": (
        "为支持小微企业发展，某银行推出“税易贷”产品，企业凭纳税信用即可申请，无需抵押担保，贷款额度最高30"
        "0万元，年利率4.35%。今年以来，该行已累计发放此类贷款12亿元，惠及企业2000余户。"
    ),
    "fake-order fraud case": (
        "警方通报一起刷单诈骗案：受害人王女士在网上看到“兼职刷单、日结佣金”的广告后，按对方要求添加微信并下"
        "载APP，先后垫付资金8万余元，对方以“任务未完成”为由拒不返款。警方提醒，所有刷单都是诈骗，凡是要"
        "求先垫付资金的兼职，都是骗局。"
    ),
    "fake invoice crackdown": (
        "税务部门联合公安机关开展打击虚开发票专项行动，查处代开发票团伙12个，涉案发票5000余份，价税合计"
        "3.6亿元。同时，公安机关还捣毁制售假证窝点4处，收缴伪造的身份证、驾驶证等证件600余本。"
    ),
    "pornography crackdown": (
        "“扫黄打非”办公室通报，今年以来各地共查处网络传播淫秽色情信息案件1200余起，关闭色情网站和违规直"
        "播平台300余个。其中，某团伙通过社交软件发布“上门服务”招嫖信息，组织妇女卖淫，已被警方一网打尽，"
        "主要犯罪嫌疑人被依法刑事拘留。"
    ),
    "minors and online pornography": (
        "专家指出，部分网站和短视频平台以“福利视频”“免费观看”为噱头引流，向未成年人推送低俗色情内容。家长"
        "应当关注孩子的上网习惯，平台也应落实青少年模式，对涉黄账号一律封禁。"
    ),
    "statute on gambling": (
        "第三百零三条 以营利为目的，聚众赌博或者以赌博为业的，处三年以下有期徒刑、拘役或者管制，并处罚金。开"
        "设赌场的，处五年以下有期徒刑、拘役或者管制，并处罚金；情节严重的，处五年以上十年以下有期徒刑，并处罚"
        "金。组织中华人民共和国公民参与国（境）外赌博，数额巨大或者有其他严重情节的，依照前款的规定处罚。\n"
        "利用互联网、移动通讯终端等传输赌博视频、数据，组织赌博活动，具有下列情形之一的，属于刑法第三百零三条"
        "第二款规定的“开设赌场”行为：（一）建立赌博网站并接受投注的；（二）建立赌博网站并提供给他人组织赌博"
        "的；（三）为赌博网站担任代理并接受投注的；（四）参与赌博网站利润分成的。"
    ),
    "novel: a dice game": (
        "那汉子把最后两吊钱往桌上一拍，红着眼睛喊道：“押大！”庄家掀开碗来，三颗骰子却是个小。旁边看热闹的人"
        "哄笑起来，有人劝他：“十赌九输，你还是回家去吧。”那汉子却不肯走，又从怀里摸出一只银镯子，说是他娘留"
        "下的，要押在单双上再赌一把。庄家斜着眼睛看他，慢慢地摇起了骰子。"
    ),
    "lottery draw news": (
        "中国福利彩票双色球第2023100期开奖，当期开出一等奖8注，单注奖金600万元。据统计，本期全国销"
        "量3.5亿元，为社会福利事业筹集公益金1.2亿元。福彩中心提醒，彩票是公益事业，请理性购彩。"
    ),
    "football odds news": (
        "本届世界杯开赛在即，多家博彩公司开出的赔率显示，巴西队夺冠呼声最高。球评人士认为，赔率只反映投注热度"
        "，并不代表球队的真实实力，小组赛阶段往往冷门迭出。"
    ),
    "encyclopedia baccarat": (
        "百家乐是一种起源于意大利的纸牌游戏，十五世纪传入法国，后来在欧美赌场中流行。每局发牌后，玩家可以押注"
        "庄家、闲家或和局，点数接近九者为胜，押中和局的赔率最高。由于规则简单、节奏快，它成为澳门赌场中最常见"
        "的游戏之一。"
    ),
    "scam feature": (
        "最近，不少大学生在社交平台上看到“在家兼职、日结工资”的招聘信息。对方先让你做几单小任务，每单返还本"
        "金加佣金，等你投入越来越多，就以系统卡单为由要求继续充值，最后拉黑走人。专家说，凡是要你先垫钱的兼职"
        "，基本都是陷阱。"
    ),
    "novel macau": (
        "他在葡京酒店的赌桌前坐了整整一夜，面前的筹码从一座小山变成了薄薄的几枚。荷官面无表情地发着牌，身后看"
        "热闹的人换了一拨又一拨。天快亮的时候，他把最后一枚筹码推了出去，押了庄。"
    ),
    "microcredit history": (
        "孟加拉国的格莱珉银行向农村贫困妇女发放小额贷款，无需抵押，由五人小组互相监督还款。这种模式后来被许多"
        "国家借鉴，我国也在一些贫困地区开展了小额信贷扶贫试点，贷款额度一般在几千元以内。"
    ),
    "health article": (
        "性教育专家指出，青少年过早接触色情视频会形成对性的错误认知。家长不必谈性色变，应当以科学的态度告诉孩"
        "子什么是健康的亲密关系，并教会他们保护自己。"
    ),
    "sports lottery shop": (
        "体彩投注站的老板说，世界杯期间来买足彩的人比平时多了三倍，不少球迷一边看赔率一边研究阵容。他提醒大家"
        "，购彩要量力而行，不要把彩票当成发财的手段。"
    ),
    "court gambling": (
        "经审理查明，2021年3月至8月，被告人张某在某境外赌博网站担任代理，发展下线会员40余人，组织会员"
        "在该网站进行百家乐、龙虎斗等赌博游戏，并按照会员投注额的1.5%获取返水，非法获利共计12万元。本院"
        "认为，被告人张某的行为已构成开设赌场罪，依法应予惩处。"
    ),
    "loan advice": (
        "借钱之前，先算清楚真实利率。很多网贷广告宣称“日息低至万分之五”，听起来不多，换算成年化利率就是18"
        "%。有些平台还会收取服务费、会员费，实际成本更高。消费者应当选择持牌金融机构，仔细阅读借款合同，量力"
        "而行，避免以贷养贷。"
    ),
    "novel casino": (
        "赌场里烟雾缭绕，老虎机叮叮当当地响个不停。他挤到轮盘桌前，把攒了半年的工钱换成筹码，一股脑儿押在了红"
        "色上。小球在轮盘里转了一圈又一圈，最后落在了黑色的格子里。他愣在原地，耳边只剩下荷官收筹码的声音。"
    ),
    "vice crackdown": (
        "记者从市公安局获悉，警方近日在一次专项行动中捣毁一个组织卖淫的窝点。据了解，该团伙在网上以“同城交友"
        "”“上门按摩”为幌子招揽嫖客，收费从数百元到上千元不等。目前，8名犯罪嫌疑人已被依法刑事拘留，案件正"
        "在进一步审理中。"
    ),
    "encyclopedia lottery": (
        "时时彩是一种以高频开奖为特点的彩票玩法，最早由重庆福利彩票发行中心推出，每隔十分钟左右开奖一次。由于"
        "开奖频率高、玩法复杂，容易诱发赌博心理，财政部于2019年停止了全国高频快开彩票的销售。"
    ),
    "rural credit": (
        "今年以来，农商银行持续加大对农户的信贷支持，推出“惠农快贷”产品。农户无需抵押担保，凭借良好的信用记"
        "录即可申请，最高额度30万元，审批最快当天完成。截至6月末，该产品已累计放款8.6亿元，惠及农户1."
        "2万户。"
    ),
    "anti-fraud PSA": (
        "反诈小课堂：刷单返利是最常见的网络诈骗之一。骗子通常以“足不出户、日赚数百”为诱饵，先让你做几单小任"
        "务，按时返还本金和佣金，取得信任后再让你垫付大额资金，最后以各种理由拒不返款。记住：凡是要求先垫付的"
        "兼职都是诈骗。"
    ),
    "sex education": (
        "医生提醒，性生活应当注意卫生和安全，正确使用安全套可以有效预防性传播疾病。青少年如果对性有困惑，可以"
        "向父母、老师或正规医疗机构咨询，不要轻信网络上的色情内容和不实信息。"
    ),
    "court fraud": (
        "公诉机关指控，被告人李某伙同他人冒充电商平台客服，以“取消会员自动扣费”为由，诱骗被害人下载屏幕共享"
        "软件并转账，共骗取被害人钱款人民币23万余元。被告人到案后如实供述犯罪事实，法院以诈骗罪判处其有期徒"
        "刑四年，并处罚金。"
    ),
    "novel brothel": (
        "那年冬天，她在城南的一家茶楼里做事，来往的客人多半是跑码头的商人。老鸨对她说，只要肯陪客人喝几杯酒，"
        "一个月的工钱就能翻一番。她低着头没有说话，手里攥着母亲寄来的信，信里说弟弟的学费还没有着落。"
    ),
    "glossary lottery": (
        "彩票：一种以筹集社会公益资金为目的，按照特定规则发行、自愿购买并按照特定规则获得中奖机会的凭证。我国"
        "现行彩票分为福利彩票和体育彩票两类，玩法包括乐透型、数字型、竞猜型、即开型等。"
    ),
    "consumer loan news": (
        "央行最新数据显示，今年上半年住户消费贷款增加1.2万亿元。多家银行下调个人消费贷款利率，部分产品年化"
        "利率降至3%左右，并推出线上申请、快速审批等服务，满足居民装修、教育、旅游等消费需求。"
    ),
    "forum sports": (
        "昨晚的比赛真是太刺激了，我们主队最后一分钟绝杀，整个球场都沸腾了。说实话赛前我都不敢看，毕竟对面是联"
        "赛第一，赔率都开到一赔五了。下一场客场打副班长，希望主力别再受伤，拿下三分就能冲进前四。"
    ),
    "health sexuality": (
        "泌尿外科专家表示，性功能障碍是常见病，不必羞于就医。市面上很多所谓的“延时喷剂”“壮阳药”成分不明，"
        "长期使用可能损害健康。患者应当到正规医院检查，在医生指导下规范治疗。"
    ),
    "news gambling arrest": (
        "据报道，警方日前在一处出租屋内查获一个利用微信群组织赌博的团伙。该团伙以“牛牛”“抢红包”等形式组织"
        "参赌人员下注，并按比例抽头渔利，涉案资金流水达300余万元。目前，6名涉案人员已被依法采取刑事强制措"
        "施。"
    ),
    "finance explainer": (
        "什么是随借随还？随借随还是指借款人在授信额度内可以随时借款、随时还款，按实际使用天数计算利息。与传统"
        "的等额本息相比，这种方式更加灵活，但借款人也要注意，部分平台的日利率看似不高，折算成年化利率后并不便"
        "宜。"
    ),
    "novel gambler": (
        "三叔年轻时好赌，一到过年就往镇上的赌档里钻。押大押小，输多赢少，家里的两亩水田就是那时候输掉的。三婶"
        "为这事哭了好几回，后来三叔剁了自己一根手指头，发誓再也不碰骰子，这才算是改了。"
    ),
    "sex ed review": (
        "这本青春期教育读物写得很用心，用漫画的形式讲解身体发育、月经、遗精等知识，还专门用一章讲了如何识别和"
        "拒绝网络上的色情诱惑、如何保护自己不受性侵害。孩子读完后主动来问了我很多问题，亲子沟通顺畅了不少。"
    ),
    "job scam warning": (
        "求职季来临，人社部门提醒广大毕业生，警惕以“高薪兼职”“日结工资”为幌子的招聘陷阱。正规企业招聘不会"
        "以任何名义收取押金、培训费、服装费，求职者一旦遇到要求先交钱的情况，应立即停止并向有关部门反映。"
    ),
    "lottery win story": (
        "家住市区的王先生上周花10元购买了一注双色球彩票，没想到竟中了一等奖，奖金高达680万元。王先生说，"
        "他坚持买彩票已经十多年了，每期都是机选，这次中奖完全是运气。领奖后，他当场捐出10万元用于公益事业。"
    ),
    "court prostitution": (
        "被告人王某于2020年至2021年间，在其经营的足浴店内，以提供“按摩”“全套服务”为名，容留多名女"
        "子从事卖淫活动，从中非法获利8万余元。法院认为，被告人王某容留他人卖淫，其行为已构成容留卖淫罪，判处"
        "有期徒刑二年，并处罚金人民币一万元。"
    ),
    "bank loan notice": (
        "为进一步支持实体经济发展，本行面向个体工商户推出信用贷款，符合条件的客户可凭营业执照在线申请，经审批"
        "后发放贷款，具体额度和利率以审批结果为准。详情请咨询当地网点或拨打客服热线。"
    ),
    "novel mahjong": (
        "老太太们的麻将从午饭后一直打到天黑，桌上的硬币推来推去，输赢不过几块钱。张奶奶手气好，连和了三把，笑"
        "得合不拢嘴，说晚上要请大家吃饺子。"
    ),
    "sports betting news": (
        "国家体育总局体育彩票管理中心数据显示，今年上半年竞彩销量同比增长，其中足球比赛竞猜占比最大。管理中心"
        "提醒购彩者，理性购彩，量力而行，切勿沉迷。"
    ),
    "literature review": (
        "这部小说以上世纪九十年代的南方小城为背景，讲述了一个赌徒倾家荡产又浪子回头的故事。作者对赌场的描写细"
        "致入微，押注、翻牌、输光后的绝望，都写得令人窒息。"
    ),
    "ecommerce ad": (
        "双十一狂欢节，全场满300减50，新用户注册即送20元无门槛优惠券。爆款羽绒服限时五折，前1000名"
        "下单还赠送围巾一条。点击下方链接立即抢购，数量有限，先到先得！"
    ),
}


@pytest.fixture(scope="module")
def scorer() -> SafetyScorer:
    return SafetyScorer(SafetyConfig())


# --- verdicts on our pages ----------------------------------------------------------------------


@pytest.mark.parametrize("category,page", [(c, p) for c, ps in POSITIVES.items() for p in ps])
def test_promotion_pages_are_caught_with_their_category(scorer, category, page):
    assert scorer.verdict(scorer.scores(page)) == f"unsafe_{category}"


def test_a_text_with_a_lone_surrogate_is_scored_as_with_a_replacement_character(scorer):
    """ahocorasick_rs takes UTF-8 only; a lone surrogate (from a bad decode upstream) is read as
    U+FFFD, which keeps every offset, instead of failing the batch with UnicodeEncodeError."""
    page = POSITIVES["gambling"][0]
    broken = page[:5] + "\ud800" + page[5:]
    assert scorer.scores_batch([broken]) == scorer.scores_batch([page[:5] + "\ufffd" + page[5:]])
    assert sum(scorer.scores_batch([broken])[0].values()) > 0


@pytest.mark.parametrize("name", list(NEGATIVES))
def test_text_about_the_schemes_is_spared(scorer, name):
    scores = scorer.scores(NEGATIVES[name])
    assert scorer.verdict(scores) is None, (name, scores)


def test_every_category_has_pages_both_ways():
    assert set(POSITIVES) == set(CATEGORIES)
    assert all(len(pages) >= 5 for pages in POSITIVES.values())


# --- scores computed by hand ----------------------------------------------------------------------


def test_loan_slogans_score_one_point_per_construction(scorer):
    # 不用抵押 and 不用担保 are one construction (no collateral / guarantor): 1; 极速到账 (fast
    # payout): 1; 日息 (daily interest): 1; 速借 (lexicon): 1. Nothing else in any list.
    scores = scorer.scores("速借｜极速到账，不用抵押不用担保，日息低至0.02%")
    assert scores["loans"] == 4
    assert {c: s for c, s in scores.items() if c != "loans"} == {c: 0 for c in scorer.lists if c != "loans"}


def test_a_phrase_two_patterns_describe_scores_once(scorer):
    # 足不出户、日赚数百 is matched by "earn a fixed amount" (日赚数百) and by "earn from home"
    # (足不出户、日赚); their matches overlap, so the second pattern does not count.
    hits = scorer.hits("足不出户、日赚数百")["fraud"]
    assert hits.terms == frozenset()
    assert list(hits.patterns.values()) == ["日赚数百"]
    assert hits.score == 1


def test_a_repeated_construction_scores_once(scorer):
    once = scorer.scores("猜大小，猜单双")["gambling"]
    assert once == 1
    assert scorer.scores("猜大小，猜单双。押大押小，买单买双！")["gambling"] == once


def test_bundled_lexicon_terms_score_exactly_one_point(scorer):
    """No lexicon term contains a match of a pattern of its list, nor another term of it."""
    doubles = [
        (c, t, scorer.scores(t)[c]) for c in scorer.lists for t in scorer.lexicons[c].terms if scorer.scores(t)[c] != 1
    ]
    assert doubles == []


def test_input_is_normalised_before_matching(scorer):
    # full-width letters and digits, upper case: NFKC + lower case gives 首充送100, vip会员解锁
    assert scorer.scores("首充送１００")["gambling"] == 1
    assert scorer.scores("ＶＩＰ会员解锁全集")["pornography"] == 1


# --- thresholds and registers ---------------------------------------------------------------------


def test_reporting_raises_and_promotion_lowers_the_threshold(scorer):
    cfg = scorer.cfg
    assert scorer.threshold("fraud", {}) == 4
    assert scorer.threshold("fraud", {REPORTING: cfg.report_min_markers - 1}) == 4
    assert scorer.threshold("fraud", {REPORTING: cfg.report_min_markers}) == 6
    assert scorer.threshold("fraud", {PROMOTION: cfg.promo_min_markers}) == 2
    assert scorer.threshold("fraud", {REPORTING: 5, PROMOTION: 5}) == 4
    floor = SafetyScorer(SafetyConfig(promo_discount=5))
    assert floor.threshold("fraud", {PROMOTION: 9}) == 2  # never below min_evidence


def test_verdict_names_the_highest_scoring_category(scorer):
    assert scorer.verdict({"gambling": 5, "loans": 6, "fraud": 0, "pornography": 0}) == "unsafe_loans"
    assert scorer.verdict({"gambling": 5, "fraud": 5}) == "unsafe_fraud"  # a tie: the name decides
    assert scorer.verdict({"gambling": 3, "loans": 3}) is None
    assert scorer.verdict({"gambling": 3, PROMOTION: 2}) == "unsafe_gambling"
    assert scorer.verdict({"gambling": 5, REPORTING: 2}) is None
    assert scorer.verdict({REPORTING: 9, PROMOTION: 9}) is None  # registers never name a verdict


def test_min_score_override_keeps_the_other_categories(scorer):
    custom = SafetyScorer(SafetyConfig(min_score={"loans": 2}))
    assert custom.thresholds == {**scorer.thresholds, "loans": 2}
    with pytest.raises(ValueError, match="gamblng"):
        SafetyScorer(SafetyConfig(min_score={"gamblng": 3}))
    with pytest.raises(ValueError, match="promotion"):
        SafetyScorer(SafetyConfig(min_score={PROMOTION: 3}))


def test_only_the_first_max_chars_are_scanned():
    page = POSITIVES["loans"][0]
    short = SafetyScorer(SafetyConfig(max_chars=100))
    assert short.verdict(short.scores(page)) == "unsafe_loans"
    assert short.scores("。" * 100 + page)["loans"] == 0


# --- user extensions --------------------------------------------------------------------------------

TEXT = "本平台推出幸运大转盘，天天抽奖。"


def test_an_extra_term_adds_a_point_and_is_normalised(scorer):
    assert scorer.scores(TEXT)["gambling"] == 0
    extended = SafetyScorer(SafetyConfig(extra_terms={"gambling": ("幸運大轉盤", "  ")}))  # traditional: no match
    assert extended.scores(TEXT)["gambling"] == 0
    extended = SafetyScorer(SafetyConfig(extra_terms={"gambling": ("ＬＵＣＫＹ大转盘", "幸运大转盘")}))
    assert extended.scores(TEXT)["gambling"] == 1
    assert extended.scores("lucky大转盘")["gambling"] == 1
    assert extended.fingerprint != scorer.fingerprint


def test_an_extra_pattern_adds_a_point(scorer):
    extended = SafetyScorer(SafetyConfig(extra_patterns={"gambling": (r"(幸运|欢乐)大?转盘",)}))
    assert extended.scores(TEXT)["gambling"] == 1
    assert extended.scores("欢乐转盘")["gambling"] == 1
    assert extended.hits(TEXT)["gambling"].patterns == {r"(幸运|欢乐)大?转盘": "幸运大转盘"}


def test_extras_for_an_unknown_category_are_refused():
    with pytest.raises(ValueError, match="weapons"):
        SafetyScorer(SafetyConfig(extra_terms={"weapons": ("仿真枪",)}))


def test_a_bad_extra_pattern_names_its_config_key():
    with pytest.raises(PatternError, match=r"safety\.extra_patterns\.loans\[1\]"):
        SafetyScorer(SafetyConfig(extra_patterns={"loans": ("日息", "(未闭合")}))


# --- list files -------------------------------------------------------------------------------------


def _copy_lists(tmp_path: Path) -> Path:
    for entry in SAFETY_DIR.iterdir():
        shutil.copy(str(entry), tmp_path / entry.name)
    return tmp_path


def test_a_bad_regex_in_a_patterns_file_names_file_and_line(tmp_path):
    d = _copy_lists(tmp_path)
    lines = (d / "gambling.patterns").read_text(encoding="utf-8").splitlines()
    lines.insert(5, "(首充|首存送\\d+")  # line 6 of the file
    (d / "gambling.patterns").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(PatternError, match=re.escape(f"{d / 'gambling.patterns'}:6: bad regular expression")):
        SafetyScorer(SafetyConfig(lists_dir=str(d)))


def test_a_pattern_that_matches_nothing_at_all_is_refused(tmp_path):
    d = _copy_lists(tmp_path)
    with open(d / "fraud.patterns", "a", encoding="utf-8") as f:
        f.write("(刷单)?\n")
    n = len((d / "fraud.patterns").read_text(encoding="utf-8").splitlines())
    with pytest.raises(PatternError, match=f"fraud.patterns:{n}: .*empty string"):
        SafetyScorer(SafetyConfig(lists_dir=str(d)))


def test_a_new_category_needs_a_threshold(tmp_path):
    d = _copy_lists(tmp_path)
    (d / "weapons.txt").write_text("# category: weapons\n# version: 1\n仿真枪出售\n", encoding="utf-8")
    with pytest.raises(ValueError, match="weapons"):
        SafetyScorer(SafetyConfig(lists_dir=str(d)))
    scorer = SafetyScorer(SafetyConfig(lists_dir=str(d), min_score={"weapons": 1}))
    assert scorer.verdict(scorer.scores("高仿仿真枪出售，货到付款")) == "unsafe_weapons"
    assert scorer.versions["weapons"] == "1/-"


def test_bundled_lists_carry_the_headers():
    for path in sorted(SAFETY_DIR.iterdir()):
        if path.name.endswith((".txt", ".patterns")):
            head = path.read_text(encoding="utf-8").splitlines()[:3]
            stem = path.name.rsplit(".", 1)[0]
            assert head[0] == f"# category: {stem}", path.name
            assert head[1].startswith("# version: 20") and head[2].startswith("# description: "), path.name


def test_the_pangu_rule_does_not_read_the_safety_lists():
    """read_lists_dir takes the *.txt files of sensitive_words/ itself, never those of safety/."""
    lists = read_lists_dir(SENSITIVE_DIR)
    assert sorted(kl.category for kl in lists) == ["drugs", "fraud", "gambling", "pornography"]
    top = {
        normalise(line.strip())
        for p in SENSITIVE_DIR.iterdir()
        if p.name.endswith(".txt")
        for line in p.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {t for kl in lists for t in kl.terms} == top


# --- the literal prefilter ----------------------------------------------------------------------------


def test_requirement_of_hand_written_patterns():
    both = frozenset({"不用抵押", "不用担保", "无需抵押", "无需担保"})
    assert requirement("(不用|无需)(抵押|担保)") == [(both,)]
    # an optional part is never required alone ({送, 首充送}: every match holds one); a class of
    # digits gives nothing and cuts the literal runs (送 | 元)
    assert requirement(r"(首充)?送\d+元") == [(frozenset({"送", "首充送"}), frozenset({"元"}))]
    assert requirement(r"\d+元?") == []
    # alternatives keep their own requirements; a sequence needs all its literal runs
    assert requirement(r"日息|(月息|利息)[^。]{0,3}低至") == [
        (frozenset({"日息"}),),
        (frozenset({"月息", "利息"}), frozenset({"低至"})),
    ]
    assert requirement("(?i)abc") == []  # case-insensitive: not modelled, the pattern always runs


def test_prefilter_never_hides_a_match(scorer):
    """The gated scores equal a plain search of every pattern, on our pages and on news."""
    from demo.sources import news_pages

    texts = [p for ps in POSITIVES.values() for p in ps] + list(NEGATIVES.values())
    texts += ["\n".join([t, *paras]) for t, paras, _ in news_pages()[::6]]
    for text in texts:
        norm = normalise(text)
        gated = scorer.hits(norm, normalised=True)
        for cat, pattern, rx in scorer._patterns:
            if rx.search(norm) and pattern not in gated[cat].patterns:
                # a pattern may only be absent when its matches all overlap counted ones
                spans = [m.span() for m in rx.finditer(norm)]
                counted = [re.search(p, norm).span() for p in gated[cat].patterns]
                assert all(any(s < e2 and s2 < e for s2, e2 in counted) for s, e in spans), (cat, pattern)


def test_leading_strings_of_hand_written_patterns():
    assert leading(r"(存|充)\d+元?(送|返)") == {"存", "充"}
    assert leading("点击(下方|上方)链接") == {"点击下方链接", "点击上方链接"}  # the literal run goes on
    assert leading(r"日息|(月息|利息)[^。]{0,3}低至") == {"日息", "月息", "利息"}
    assert leading(r"(?:仅剩)+\d") == {"仅剩"}
    assert leading(r"(官方)?app") is None  # an optional opening: nothing every match begins with
    assert leading(r"\d+元") is None and leading(r"(\d+|十)倍") is None and leading("(?i)abc") is None


def test_matching_at_leading_strings_finds_what_a_search_finds(scorer):
    """Hits (the counted matches themselves) and scores equal those of the same scorer searching
    every candidate pattern in the whole text, on our pages, news, and pages made of slogans."""
    from demo.sources import news_pages

    texts = [p for ps in POSITIVES.values() for p in ps] + list(NEGATIVES.values())
    texts += ["\n".join([t, *paras]) for t, paras, _ in news_pages()[::6]]
    pages = [p for ps in POSITIVES.values() for p in ps]
    texts += ["".join(pages[(7 * i + k) % len(pages)][k * 13 % 40 :][:60] for k in range(8)) for i in range(200)]
    searching = SafetyScorer()
    searching._leading = [False] * len(searching._leading)
    assert sum(scorer._leading) > 90  # most bundled patterns begin with literals
    assert [scorer.hits(t) for t in texts] == [searching.hits(t) for t in texts]
    assert scorer.scores_batch(texts) == [searching.scores(t) for t in texts]


# --- clean text: the false-removal rate --------------------------------------------------------------


def test_false_removal_rate_on_peoples_daily_is_at_most_0_2_percent(scorer):
    from demo.sources import news_pages

    docs = ["\n".join([title, *paras]) for title, paras, _ in news_pages()]
    assert len(docs) == 2912
    start = time.process_time()
    removed = [d[:40] for d in docs if scorer.verdict(scorer.scores(d))]
    seconds = time.process_time() - start
    assert len(removed) / len(docs) <= 0.002, removed
    assert removed == []  # measured 2026-11: no document scores above 2 in any category
    # a guard against losing the prefilter (one alternation per category ran at ~2 MB/s);
    # the measured speed is ~22 MB per CPU-second on this corpus
    megabytes = sum(len(d.encode()) for d in docs) / 1e6
    assert megabytes / seconds > 8, f"{megabytes / seconds:.1f} MB/s"
