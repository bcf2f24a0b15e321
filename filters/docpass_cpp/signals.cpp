#include "signals.h"

#include <algorithm>

#include "common.h"

namespace docpass {

namespace {

// filters.quality.signals's categories (bits 0-2 of its char table) and flags
enum Cat { SPACE = 0, HAN = 1, LATIN = 2, LETTER = 3, DIGIT = 4, PUNCT = 5, SYMBOL = 6 };
constexpr uint8_t CAT = 7, END = 8, CLOSE = 16, SEP = 32;

inline float frac(double num, double den) { return den > 0 ? static_cast<float>(num / den) : 0.0f; }

inline bool ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }
// DATE_END's digit class [0-9０-９]
inline bool date_digit(uint32_t c) { return ascii_digit(c) || (c >= 0xFF10 && c <= 0xFF19); }
inline bool date_space(uint32_t c) { return c == ' ' || c == '\t' || c == 0x3000; }
inline bool date_tail(uint32_t c) { return date_space(c) || c == ')' || c == 0xFF09; }

// Length of the run of DATE_END digits at i (not beyond e).
inline int64_t digit_run(const uint32_t* c, int64_t i, int64_t e) {
  int64_t j = i;
  while (j < e && date_digit(c[j])) ++j;
  return j - i;
}

// DATE_END's tail: [ \t\u3000]*[)）]?[ \t\u3000]*$, from q to e
inline bool tail_to_end(const uint32_t* c, int64_t q, int64_t e) {
  while (q < e && date_space(c[q])) ++q;
  if (q < e && (c[q] == ')' || c[q] == 0xFF09)) ++q;
  while (q < e && date_space(c[q])) ++q;
  return q == e;
}

// Whether c[s:e] is matched whole by DATE_END (each digit group must end where a non-digit of the
// pattern follows, so every alternative has one way through).
bool date_end_at(const uint32_t* c, int64_t s, int64_t e) {
  int64_t r1 = digit_run(c, s, e);
  if (r1 == 0) return false;
  int64_t p = s + r1;
  // D{2,4}[-/.年]D{1,2}(?:[-/.月]D{1,2}日?)?
  if (r1 >= 2 && r1 <= 4 && p < e && (c[p] == '-' || c[p] == '/' || c[p] == '.' || c[p] == 0x5E74)) {
    int64_t r2 = digit_run(c, p + 1, e);
    if (r2 >= 1 && r2 <= 2) {
      int64_t q = p + 1 + r2;
      if (tail_to_end(c, q, e)) return true;
      if (q < e && (c[q] == '-' || c[q] == '/' || c[q] == '.' || c[q] == 0x6708)) {
        int64_t r3 = digit_run(c, q + 1, e);
        if (r3 >= 1 && r3 <= 2) {
          int64_t q2 = q + 1 + r3;
          if (q2 < e && c[q2] == 0x65E5 && tail_to_end(c, q2 + 1, e)) return true;
          if (tail_to_end(c, q2, e)) return true;
        }
      }
    }
  }
  if (r1 > 2) return false;
  // D{1,2}月D{1,2}日
  if (p < e && c[p] == 0x6708) {
    int64_t r2 = digit_run(c, p + 1, e);
    int64_t q = p + 1 + r2;
    if (r2 >= 1 && r2 <= 2 && q < e && c[q] == 0x65E5 && tail_to_end(c, q + 1, e)) return true;
  }
  // D{1,2}[:：]D{2}(?:[:：]D{2})?
  if (p < e && (c[p] == ':' || c[p] == 0xFF1A) && digit_run(c, p + 1, e) == 2) {
    int64_t q = p + 3;
    if (tail_to_end(c, q, e)) return true;
    if (q < e && (c[q] == ':' || c[q] == 0xFF1A) && digit_run(c, q + 1, e) == 2 && tail_to_end(c, q + 3, e)) {
      return true;
    }
  }
  return false;
}

// One match of filters.text.chars.STAMP at i, as Python's backtracking takes it: its end, or -1.
//   (?<![0-9])(?:[0-9]{4}[-/.][0-9]{1,2}[-/.][0-9]{1,2}(?:[ T]+[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?)?
//   |[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?)(?![0-9])
int64_t stamp_at(const uint32_t* c, int64_t n, int64_t i) {
  auto digit = [&](int64_t k) { return k < n && ascii_digit(c[k]); };
  auto sep = [&](int64_t k) { return k < n && (c[k] == '-' || c[k] == '/' || c[k] == '.'); };
  auto free_after = [&](int64_t k) { return !digit(k); };
  // [0-9]{1,2}:[0-9]{2}(?::[0-9]{2})? then (?![0-9]), from k; greedy, backtracking
  auto clock = [&](int64_t k) -> int64_t {
    for (int h = 2; h >= 1; --h) {
      bool ok = true;
      for (int j = 0; j < h; ++j) ok = ok && digit(k + j);
      if (!ok) continue;
      int64_t m = k + h;
      if (!(m < n && c[m] == ':' && digit(m + 1) && digit(m + 2))) continue;
      int64_t e = m + 3;
      if (e < n && c[e] == ':' && digit(e + 1) && digit(e + 2) && free_after(e + 3)) return e + 3;
      if (free_after(e)) return e;
    }
    return -1;
  };
  if (i > 0 && ascii_digit(c[i - 1])) return -1;
  if (digit(i) && digit(i + 1) && digit(i + 2) && digit(i + 3) && sep(i + 4)) {
    for (int mo = 2; mo >= 1; --mo) {
      bool ok = true;
      for (int j = 0; j < mo; ++j) ok = ok && digit(i + 5 + j);
      int64_t s2 = i + 5 + mo;
      if (!ok || !sep(s2)) continue;
      for (int d = 2; d >= 1; --d) {
        bool okd = true;
        for (int j = 0; j < d; ++j) okd = okd && digit(s2 + 1 + j);
        if (!okd) continue;
        int64_t e = s2 + 1 + d;
        int64_t run = 0;
        while (e + run < n && (c[e + run] == ' ' || c[e + run] == 'T')) ++run;
        for (int64_t r = run; r >= 1; --r) {
          int64_t t = clock(e + r);
          if (t >= 0) return t;
        }
        if (free_after(e)) return e;
      }
    }
  }
  return clock(i);
}

}  // namespace

void SignalPass::compute(const uint32_t* c, int64_t n, const std::vector<int64_t>& word_ends, const int64_t* rows,
                         int64_t n_rows, uint64_t doc, DocResult& out) {
  const uint8_t* t = p_.table;
  int64_t counts[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t latin_pairs = 0;
  uint8_t prev = SPACE;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t cat = t[c[i]] & CAT;
    ++counts[cat];
    latin_pairs += (cat == LATIN) & (prev == LATIN);
    prev = cat;
  }
  int64_t visible = n - counts[SPACE];
  out.visible = visible;
  lines(c, n, rows, n_rows, doc, out);
  words(c, word_ends, doc, out);
  // digits of date and time stamps (filters.text.chars.STAMP): no figures of digit_ratio, no units of
  // writing
  int64_t stamped = stamp_digits(c, n);
  // a Markdown table's cells (lines() counts them): their symbols and figures are data
  out.sig[SYMBOL_RATIO] = frac(counts[SYMBOL] - cells_.symbols, visible);
  out.sig[DIGIT_RATIO] = frac(counts[DIGIT] - stamped, visible - stamped);
  out.sig[LATIN_RATIO] = frac(counts[LATIN], visible);
  out.sig[PUNCT_RATIO] = frac(counts[PUNCT], visible);
  // filters.text.chars.TextStats.han_ratio: Han over units of writing, a Latin word one unit; no
  // digit of a stamp or of a table's cells (a cell's stamp among them)
  int64_t written = counts[HAN] + counts[LETTER] + counts[LATIN] + counts[DIGIT] - latin_pairs - stamped;
  written += cells_.stamped - cells_.figures;
  out.sig[HAN_RATIO] = frac(counts[HAN], written);
}

int64_t SignalPass::stamp_digits(const uint32_t* c, int64_t n) const {
  int64_t digits = 0;
  int64_t i = 0;
  while (i < n) {
    int64_t e = ascii_digit(c[i]) ? stamp_at(c, n, i) : -1;
    if (e < 0) {
      ++i;
      continue;
    }
    for (int64_t k = i; k < e; ++k) digits += ascii_digit(c[k]);
    i = e;
  }
  return digits;
}

bool SignalPass::dated(const uint32_t* c, int64_t ls, int64_t le) const {
  // filters.quality.signals._date_lines: the stamp must end at the last character outside the tail
  // characters, which must be a digit or 日; DATE_END is searched from DATE_MAX before it
  int64_t stamp_end = le - 1;
  if (le > ls && date_tail(c[le - 1])) {
    while (stamp_end >= ls && date_tail(c[stamp_end])) --stamp_end;
  }
  if (stamp_end < ls || !(date_digit(c[stamp_end]) || c[stamp_end] == 0x65E5)) return false;
  for (int64_t s = std::max(ls, stamp_end + 1 - p_.date_max); s < le; ++s) {
    if (date_end_at(c, s, le)) return true;
  }
  return false;
}

void SignalPass::lines(const uint32_t* c, int64_t n, const int64_t* rows, int64_t n_rows, uint64_t doc,
                       DocResult& out) {
  const uint8_t* t = p_.table;
  lines_.clear();
  stamped_.clear();
  int64_t n_lines = 0, ended_lines = 0, short_lines = 0, sep_lines = 0;
  cells_ = Cells{};
  bool empty_before = true;  // the document's first line starts a block
  int64_t ls = 0, line = 0, row = 0;
  while (ls <= n) {
    // a row of a Markdown table (markdown.prose_rows) is neither a separator nor a short line
    while (row < n_rows && rows[row] < line) ++row;
    bool cell = row < n_rows && rows[row] == line;
    ++line;
    int64_t le = ls;
    while (le < n && c[le] != '\n') ++le;
    int64_t first = -1, last = -1, chars = 0, seps = 0, other_punct = 0, items = 0, long_items = 0, run = 0;
    for (int64_t i = ls; i < le; ++i) {
      uint8_t v = t[c[i]];
      uint8_t cat = v & CAT;
      bool sep = (v & SEP) != 0;
      seps += sep;
      if (cell) {
        cells_.symbols += cat == SYMBOL;
        cells_.figures += cat == DIGIT;
      }
      if (cat == SPACE) {
        if (run) long_items += run > p_.menu_max_item_chars;
        run = 0;
        continue;
      }
      if (first < 0) first = i;
      last = i;
      ++chars;
      other_punct += (cat == PUNCT) && !sep;
      if (sep) {
        if (run) long_items += run > p_.menu_max_item_chars;
        run = 0;
      } else {
        if (run == 0) ++items;
        ++run;
      }
    }
    if (run) long_items += run > p_.menu_max_item_chars;
    if (chars > 0) {
      ++n_lines;
      if (cell) cells_.stamped += stamp_digits(c + ls, le - ls);
      // sentence-final punctuation, or up to max_closers closers right after it (over visible characters)
      int64_t k = last;
      bool ended = (t[c[k]] & END) != 0;
      for (int it = 0; it < p_.max_closers && !ended; ++it) {
        if (!(t[c[k]] & CLOSE) || k == first) break;
        --k;
        while ((t[c[k]] & CAT) == SPACE) --k;
        ended = (t[c[k]] & END) != 0;
      }
      ended_lines += ended;
      uint8_t lv = t[c[last]];
      bool bare = (lv & CAT) != PUNCT || (lv & SEP) != 0;
      short_lines += chars < p_.short_line_chars && bare && !cell;
      int64_t stripped = last - first + 1;
      bool separator = static_cast<double>(seps + stripped - chars) >= p_.separator_share * static_cast<double>(stripped);
      if (seps >= 2 && other_punct == 0 && items >= p_.menu_min_items && long_items == 0) separator = true;
      sep_lines += separator && !cell;
      lines_.push_back({chars, doc_key(substring_key(c, first, last + 1), doc), empty_before});
      empty_before = false;
      stamped_.push_back(dated(c, ls, le));
    } else {
      empty_before = true;
    }
    ls = le + 1;
  }
  out.sig[LINE_PUNCT] = frac(ended_lines, n_lines);
  out.sig[SHORT_LINE] = frac(short_lines, n_lines);
  out.sig[SEPARATOR_LINE] = frac(sep_lines, n_lines);
  // a dated line counts only beside another dated (non-empty) line: a list, not a post header
  int64_t listed = 0;
  for (size_t k = 0; k < stamped_.size(); ++k) {
    listed += stamped_[k] && ((k > 0 && stamped_[k - 1]) || (k + 1 < stamped_.size() && stamped_[k + 1]));
  }
  out.sig[DATE_LINE] = frac(listed, n_lines);
  // Gopher's duplicate lines and paragraphs: characters of the items whose key came earlier
  std::vector<std::pair<uint64_t, int64_t>>& keyed = groups_;
  keyed.clear();
  for (const Line& l : lines_) keyed.push_back({l.key, l.chars});
  double dup_line = dup_chars(keyed);
  // paragraphs: blocks of lines between empty lines; a text of fewer than two blocks has its lines
  int64_t blocks = 0;
  for (const Line& l : lines_) blocks += l.is_first;
  keyed.clear();
  uint64_t power = 1;
  for (const Line& l : lines_) {
    if (l.is_first || blocks < 2) {
      keyed.push_back({0, 0});
      power = 1;
    }
    power *= KEY_P;  // quality.repeat.block_keys: the line of rank r weighs P**(r + 1)
    keyed.back().first += l.key * power;
    keyed.back().second += l.chars;
  }
  double dup_para = dup_chars(keyed);
  out.sig[DUP_LINE] = frac(dup_line, out.visible);
  out.sig[DUP_PARA] = frac(dup_para, out.visible);
}

void SignalPass::words(const uint32_t* c, const std::vector<int64_t>& word_ends, uint64_t doc, DocResult& out) {
  const uint8_t* t = p_.table;
  hashes_.clear();
  csum_.assign(1, 0);
  fw_seen_.assign(p_.function_words.size(), 0);
  int64_t start = 0, fw = 0, distinct = 0;
  for (int64_t end : word_ends) {
    bool word = false;
    for (int64_t i = start; i < end && !word; ++i) {
      uint8_t cat = t[c[i]] & CAT;
      word = cat != SPACE && cat != PUNCT && cat != SYMBOL;
    }
    if (word) {
      uint64_t key = substring_key(c, start, end);
      hashes_.push_back(key);
      csum_.push_back(csum_.back() + (end - start));
      auto it = std::lower_bound(p_.function_words.begin(), p_.function_words.end(), key);
      if (it != p_.function_words.end() && *it == key) {
        ++fw;
        size_t id = it - p_.function_words.begin();
        distinct += !fw_seen_[id];
        fw_seen_[id] = 1;
      }
    }
    start = end;
  }
  out.sig[FW_RATIO] = frac(fw, static_cast<double>(hashes_.size()));
  out.sig[FW_DISTINCT] = static_cast<float>(distinct);
  ngrams(doc, csum_.back(), out);
}

double SignalPass::dup_chars(const std::vector<std::pair<uint64_t, int64_t>>& items) {
  // items: (key, characters) in document order; the characters of those whose key occurred before
  double total = 0;
  if (items.size() <= 32) {
    for (size_t i = 1; i < items.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (items[j].first == items[i].first) {
          total += static_cast<double>(items[i].second);
          break;
        }
      }
    }
    return total;
  }
  order_.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) order_[i] = {items[i].first, static_cast<int64_t>(i)};
  std::sort(order_.begin(), order_.end());
  for (size_t i = 1; i < order_.size(); ++i) {
    if (order_[i].first == order_[i - 1].first) total += static_cast<double>(items[order_[i].second].second);
  }
  return total;
}

double SignalPass::covered(std::vector<int64_t>& starts, int n) const {
  // quality.repeat.covered_chars: characters of the words under the union of [s, s + n)
  std::sort(starts.begin(), starts.end());
  double total = 0;
  int64_t reach = -1;
  for (int64_t s : starts) {
    int64_t e = s + n;
    int64_t from = reach < 0 ? s : std::max(s, reach);
    total += static_cast<double>(std::max<int64_t>(csum_[e] - csum_[std::min(from, e)], 0));
    reach = std::max(reach, e);
  }
  return total;
}

void SignalPass::ngrams(uint64_t doc, int64_t word_chars, DocResult& out) {
  // quality.repeat.ngram_coverage over this document's words, with the reference's keys
  for (int s = TOP2; s <= DUP10; ++s) out.sig[s] = 0.0f;
  int64_t m = static_cast<int64_t>(hashes_.size());
  if (m < 2) return;
  key_.resize(m);
  for (int64_t i = 0; i < m; ++i) key_[i] = doc_key(hashes_[i], doc);
  for (int64_t i = 0; i + 1 < m; ++i) key_[i] = (key_[i] ^ hashes_[i + 1]) * KEY_P;
  cand_.resize(m - 1);
  for (int64_t i = 0; i + 1 < m; ++i) cand_[i] = i;
  is_rep_.assign(m, 0);
  for (int n = 2; n <= 10; ++n) {
    if (n > 2) {
      for (int64_t i : cand_) key_[i] = (key_[i] ^ hashes_[i + n - 1]) * KEY_P;
    }
    groups_.clear();
    for (int64_t i : cand_) groups_.push_back({key_[i], i});
    std::sort(groups_.begin(), groups_.end());
    starts_.clear();
    // groups of equal keys with >= 2 members; for the top n-gram: most members, then most
    // characters (of its first occurrence), then the earliest first occurrence
    int64_t best_size = 0, best_chars = 0, best_first = 0;
    size_t best_lo = 0, best_hi = 0;
    for (size_t a = 0; a < groups_.size();) {
      size_t b = a + 1;
      while (b < groups_.size() && groups_[b].first == groups_[a].first) ++b;
      if (b - a >= 2) {
        int64_t first = groups_[a].second;  // sorted pairs: the smallest position first
        for (size_t k = a; k < b; ++k) starts_.push_back(groups_[k].second);
        int64_t size = static_cast<int64_t>(b - a), chars = csum_[first + n] - csum_[first];
        if (size > best_size || (size == best_size && (chars > best_chars || (chars == best_chars && first < best_first)))) {
          best_size = size, best_chars = chars, best_first = first, best_lo = a, best_hi = b;
        }
      }
      a = b;
    }
    std::fill(is_rep_.begin(), is_rep_.end(), 0);
    for (int64_t s : starts_) is_rep_[s] = 1;
    double cov;
    if (n <= 4) {
      std::vector<int64_t>& top = next_cand_;
      top.clear();
      for (size_t k = best_lo; k < best_hi; ++k) top.push_back(groups_[k].second);
      cov = covered(top, n);
    } else {
      cov = covered(starts_, n);
    }
    out.sig[TOP2 + (n - 2)] = frac(cov, static_cast<double>(word_chars));
    next_cand_.clear();
    for (int64_t i = 0; i + 1 < m; ++i) {
      if (is_rep_[i] && is_rep_[i + 1]) next_cand_.push_back(i);
    }
    if (next_cand_.empty()) break;
    cand_.swap(next_cand_);
  }
}

}  // namespace docpass
