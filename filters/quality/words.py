"""Function words of modern and classical Chinese, for ``function_word_ratio`` and
``function_word_distinct`` (``filters.quality.signals``).

Why: Gopher (Rae et al. 2021, App. A) keeps a document only if it holds at least two of "the, be,
to, of, and, that, have, with": real prose cannot avoid grammatical words, a keyword list, a menu
or an SEO page can. Chinese has no articles, but it has closed classes that every register uses:
structural and aspectual particles, prepositions, conjunctions, negation and scope adverbs,
pronouns and demonstratives, copulas. Classical Chinese (novels in 半文半白, statutes, 论语/史记
quotations) uses a different set (之 乎 者 也 矣 焉 哉 其 而 以 于 所 则 乃), so both are listed or
a chapter of 三国演义 would look like a keyword list.

Sources: the closed classes of 《现代汉语八百词》 (吕叔湘 1980: 介词, 连词, 助词, 语气词, 副词 of
negation, degree, scope and time) and the 常用虚词 of 王力《古代汉语》 (通论: 之 其 者 所 而 以 于 为
则 乃 且 若 因 与 焉 也 矣 乎 哉 耳 夫 盖 兮 诸 何 安 孰 奚 胡 曷 莫 弗 勿 毋 未 非). A word counts only
as a whole rjieba token: 的确 and 之后 are not 的 and 之. Traditional forms of the commonest ones
are listed too, for text that reaches the statistics before conversion."""

from __future__ import annotations

_MODERN = (
    # structural / aspect particles (助词)
    "的 地 得 着 了 过 所 等 等等 似的 一样 "
    # modal particles (语气词)
    "吗 呢 吧 啊 呀 嘛 啦 哇 哦 呗 罢了 而已 "
    # prepositions (介词)
    "在 于 从 自 自从 向 往 对 对于 关于 为 为了 被 把 将 由 与 跟 同 给 比 按 按照 根据 通过 除了 "
    "随着 经过 以 以及 "
    # conjunctions (连词)
    "和 及 并 并且 或 或者 还是 而 而且 但 但是 可是 然而 不过 因 因为 所以 因此 于是 如果 假如 "
    "要是 虽然 尽管 即使 只要 只有 除非 无论 不论 不管 既然 然后 那么 "
    # adverbs of negation, degree, scope, time (副词)
    "不 没 没有 别 未 也 都 就 又 还 才 再 很 最 更 太 已 已经 曾 曾经 正 正在 将要 只 仅 也许 "
    "可能 一定 非常 十分 总是 一直 "
    # pronouns and demonstratives (代词)
    "我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 自己 大家 这 那 这个 那个 这些 那些 这样 "
    "那样 这里 那里 这种 那种 此 其 其中 什么 怎么 怎样 为什么 哪 哪里 谁 每 各 某 "
    # copulas, existentials, auxiliaries (判断词, 能愿动词)
    "是 有 能 会 可 可以 要 应 应该 应当 须 必须 "
)
_CLASSICAL = (
    # particles and final particles (语气词)
    "之 乎 者 也 矣 焉 哉 兮 耳 尔 欤 邪 耶 夫 盖 与 "
    # prepositions and conjunctions
    "於 以 为 则 乃 且 若 因 虽 然 故 而 及 即 遂 既 苟 "
    # adverbs: negation, scope
    "亦 皆 俱 悉 弗 勿 毋 莫 未 非 无 不 尝 "
    # pronouns and demonstratives (吾 予 余 汝 尔 彼 此 斯 兹 是 诸 何 安 孰 奚 胡 曷)
    "吾 予 余 汝 彼 斯 兹 诸 何 安 孰 奚 胡 曷 其 所 者 "
    # speech verb that heads every quoted saying in the classics
    "曰 "
)
_TRADITIONAL = "們 這 個 為 與 於 從 對 將 還 過 沒 沒有 無 則 雖 並 並且 麼 什麼 怎麼 裡 裏 那裡 這裡 嗎 呢 應該 "

FUNCTION_WORDS: frozenset[str] = frozenset((_MODERN + _CLASSICAL + _TRADITIONAL).split())
# word -> small id, for counting distinct function words per document with numpy
FUNCTION_WORD_ID: dict[str, int] = {w: i for i, w in enumerate(sorted(FUNCTION_WORDS))}
