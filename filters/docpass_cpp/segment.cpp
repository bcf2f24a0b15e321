#include "segment.h"

#include <cmath>
#include <stdexcept>

#include "common.h"

namespace docpass {

namespace {

constexpr uint32_t ROOT_SPAN = 0x30000;  // direct children of the root: planes 0-2

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  return x;
}

// jieba.re_han_default: [\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-]
inline bool block_char(uint32_t c) {
  if (c >= 0x4E00 && c <= 0x9FD5) return true;
  if (c < 0x80) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '#' ||
           c == '&' || c == '.' || c == '_' || c == '%' || c == '-';
  }
  return false;
}

// jieba's re_eng: one ASCII letter or digit
inline bool eng_char(uint32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Python's bytes.strip() whitespace
inline bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c'; }

}  // namespace

Dictionary::Dictionary(const std::string& text) {
  root_.assign(ROOT_SPAN, NONE);
  slots_.assign(1 << 20, Slot{0, 0, 0});
  freq_.push_back(0);  // the root
  int64_t total = 0;
  std::vector<uint32_t> word;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    size_t a = pos, b = eol;
    pos = eol + 1;
    while (a < b && ascii_space(text[a])) ++a;
    while (b > a && ascii_space(text[b - 1])) --b;
    if (a == b) throw std::invalid_argument("jieba dictionary: an empty line");
    size_t sp1 = text.find(' ', a);
    if (sp1 == std::string::npos || sp1 >= b) throw std::invalid_argument("jieba dictionary: a line without frequency");
    size_t sp2 = text.find(' ', sp1 + 1);
    if (sp2 == std::string::npos || sp2 > b) sp2 = b;
    int64_t freq = std::stoll(text.substr(sp1 + 1, sp2 - sp1 - 1));
    decode_utf8(reinterpret_cast<const uint8_t*>(text.data() + a), sp1 - a, word);
    uint32_t node = 0;
    for (uint32_t cp : word) {
      uint32_t next = build_child(node, cp);
      node = next == NONE ? add_child(node, cp) : next;
    }
    freq_[node] = freq;  // the last line of a word wins, as in jieba's dict
    total += freq;
  }
  log_total_ = std::log(static_cast<double>(total));
  weight_.resize(freq_.size());
  for (size_t i = 0; i < freq_.size(); ++i) {
    // jieba: log(FREQ.get(word) or 1) - logtotal
    weight_[i] = std::log(static_cast<double>(freq_[i] > 0 ? freq_[i] : 1)) - log_total_;
  }
  // mark the edges into words with a frequency
  for (uint32_t& r : root_) {
    if (r != NONE && freq_[r] > 0) r |= WORD;
  }
  pack();
}

namespace {
inline uint32_t edge_slot(uint32_t cp, uint32_t size) {
  return static_cast<uint32_t>((static_cast<uint64_t>(cp * 0x9E3779B1u) * size) >> 32);
}
}  // namespace

void Dictionary::pack() {
  children_.assign(freq_.size(), Children{0, 0});
  std::vector<uint32_t> count(freq_.size(), 0);
  for (const Slot& s : slots_) {
    if (s.key) ++count[(s.key - 1) >> 21];
  }
  uint64_t offset = 0;
  for (size_t node = 0; node < count.size(); ++node) {
    if (!count[node]) continue;
    uint32_t size = 2;
    while (size < 2 * count[node]) size *= 2;
    children_[node] = Children{static_cast<uint32_t>(offset), size};
    offset += size;
  }
  if (offset >= NONE) throw std::invalid_argument("jieba dictionary: too many edges");
  edges_ = HugeArray<Edge>(offset, Edge{NONE, NONE});
  for (const Slot& s : slots_) {
    if (!s.key) continue;
    uint32_t parent = static_cast<uint32_t>((s.key - 1) >> 21), cp = static_cast<uint32_t>((s.key - 1) & 0x1FFFFF);
    const Children& c = children_[parent];
    uint32_t i = edge_slot(cp, c.size);
    while (edges_[c.offset + i].cp != NONE) i = (i + 1) & (c.size - 1);
    edges_[c.offset + i] = Edge{cp, s.child | (freq_[s.child] > 0 ? WORD : 0)};
  }
  std::vector<Slot>().swap(slots_);
}

uint32_t Dictionary::child(uint32_t node, uint32_t cp) const {
  if (node == 0) return cp < ROOT_SPAN ? root_[cp] : NONE;
  const Children c = children_[node];
  if (!c.size) return NONE;
  const Edge* e = edges_.data() + c.offset;
  for (uint32_t i = edge_slot(cp, c.size);; i = (i + 1) & (c.size - 1)) {
    if (e[i].cp == cp) return e[i].child;
    if (e[i].cp == NONE) return NONE;
  }
}

uint32_t Dictionary::build_child(uint32_t node, uint32_t cp) const {
  if (node == 0) return cp < ROOT_SPAN ? root_[cp] : NONE;
  uint64_t key = ((static_cast<uint64_t>(node) << 21) | cp) + 1;
  size_t mask = slots_.size() - 1;
  for (size_t i = mix(key) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.key == key) return s.child;
    if (s.key == 0) return NONE;
  }
}

uint32_t Dictionary::add_child(uint32_t node, uint32_t cp) {
  uint32_t id = static_cast<uint32_t>(freq_.size());
  if (id >= WORD) throw std::invalid_argument("jieba dictionary: too many prefixes");
  freq_.push_back(0);
  if (node == 0) {
    if (cp >= ROOT_SPAN) throw std::invalid_argument("jieba dictionary: a word starts beyond plane 2");
    root_[cp] = id;
    return id;
  }
  if ((used_ + 1) * 2 > slots_.size()) grow();
  uint64_t key = ((static_cast<uint64_t>(node) << 21) | cp) + 1;
  size_t mask = slots_.size() - 1;
  size_t i = mix(key) & mask;
  while (slots_[i].key != 0) i = (i + 1) & mask;
  slots_[i] = Slot{key, id, 0};
  ++used_;
  return id;
}

void Dictionary::grow() {
  std::vector<Slot> bigger(slots_.size() * 2, Slot{0, 0, 0});
  size_t mask = bigger.size() - 1;
  for (const Slot& s : slots_) {
    if (s.key == 0) continue;
    size_t i = mix(s.key) & mask;
    while (bigger[i].key != 0) i = (i + 1) & mask;
    bigger[i] = s;
  }
  slots_.swap(bigger);
}

void Dictionary::cut(const uint32_t* codes, int64_t n, std::vector<int64_t>& ends, std::vector<uint32_t>* nodes) const {
  int64_t i = 0;
  while (i < n) {
    if (block_char(codes[i])) {
      int64_t j = i + 1;
      while (j < n && block_char(codes[j])) ++j;
      cut_block(codes + i, j - i, i, ends, nodes);
      i = j;
      continue;
    }
    if (codes[i] == '\r' && i + 1 < n && codes[i + 1] == '\n') {
      ends.push_back(i + 2);  // re_skip_default: "\r\n" is one word
      i += 2;
    } else {
      ends.push_back(++i);  // any other character outside the blocks is a word of its own
    }
    if (nodes) nodes->push_back(NONE);
  }
}

void Dictionary::route(const uint32_t* s, int64_t n) const {
  // calc: route[idx] = max over the DAG's ends x of (weight(s[idx:x+1]) + route[x+1], x)
  score_.assign(n + 1, 0.0);
  next_.assign(n + 1, 0);
  next_node_.resize(n + 1);
  for (int64_t k = n - 1; k >= 0; --k) {
    double best = 0.0;
    int64_t best_x = -1;
    uint32_t best_node = NONE;
    uint32_t node = 0;
    for (int64_t x = k; x < n; ++x) {
      node = child(node & ~WORD, s[x]);
      if (node == NONE) break;
      if (node & WORD) {  // get_DAG keeps the ends of words with a frequency
        double v = weight_[node & ~WORD] + score_[x + 1];
        if (best_x < 0 || v > best || (v == best && x > best_x)) {
          best = v;
          best_x = x;
          best_node = node & ~WORD;
        }
      }
    }
    if (best_x < 0) {  // no word: the character alone, log(FREQ.get(c) or 1) - logtotal = log(1) - logtotal
      best = (0.0 - log_total_) + score_[k + 1];
      best_x = k;
    }
    score_[k] = best;
    next_[k] = best_x;
    next_node_[k] = best_node;
  }
}

void Dictionary::cut_block(const uint32_t* s, int64_t n, int64_t offset, std::vector<int64_t>& ends,
                           std::vector<uint32_t>* nodes) const {
  route(s, n);
  // __cut_DAG_NO_HMM: single ASCII letters and digits collect into one word
  int64_t x = 0;
  bool buf = false;
  while (x < n) {
    int64_t y = next_[x] + 1;
    if (y - x == 1 && eng_char(s[x])) {
      buf = true;
    } else {
      if (buf) {
        ends.push_back(offset + x);
        if (nodes) nodes->push_back(NONE);
      }
      buf = false;
      ends.push_back(offset + y);
      if (nodes) nodes->push_back(next_node_[x]);
    }
    x = y;
  }
  if (buf) {
    ends.push_back(offset + n);
    if (nodes) nodes->push_back(NONE);
  }
}

void Dictionary::cut_hmm(const uint32_t* codes, int64_t n, const Hmm& hmm, std::vector<int64_t>& ends) const {
  int64_t i = 0;
  while (i < n) {
    if (block_char(codes[i])) {
      int64_t j = i + 1;
      while (j < n && block_char(codes[j])) ++j;
      cut_block_hmm(codes + i, j - i, i, hmm, ends);
      i = j;
    } else if (codes[i] == '\r' && i + 1 < n && codes[i + 1] == '\n') {
      ends.push_back(i + 2);
      i += 2;
    } else {
      ends.push_back(++i);
    }
  }
}

bool Dictionary::is_word(const uint32_t* s, int64_t a, int64_t b) const {
  // FREQ.get(s[a:b]): a dictionary word with a frequency
  uint32_t node = 0;
  for (int64_t i = a; i < b; ++i) {
    node = child(node & ~WORD, s[i]);
    if (node == NONE) return false;
  }
  return (node & WORD) != 0;
}

void Dictionary::cut_block_hmm(const uint32_t* s, int64_t n, int64_t offset, const Hmm& hmm,
                               std::vector<int64_t>& ends) const {
  // __cut_DAG: the route's single-character steps collect into a buffer, flushed before a word
  route(s, n);
  const std::vector<int64_t>& next = next_;  // flush_hmm leaves the route as it is
  int64_t x = 0, buf = -1;
  while (x < n) {
    int64_t y = next[x] + 1;
    if (y - x == 1) {
      if (buf < 0) buf = x;
    } else {
      if (buf >= 0) flush_hmm(s, buf, x, offset, hmm, ends);
      buf = -1;
      ends.push_back(offset + y);
    }
    x = y;
  }
  if (buf >= 0) flush_hmm(s, buf, n, offset, hmm, ends);
}

namespace {
inline bool hmm_han(uint32_t c) { return c >= Hmm::HAN_LO && c <= Hmm::HAN_HI; }
inline bool ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }
}  // namespace

void Dictionary::flush_hmm(const uint32_t* s, int64_t a, int64_t b, int64_t offset, const Hmm& hmm,
                           std::vector<int64_t>& ends) const {
  if (b - a == 1) {
    ends.push_back(offset + b);
    return;
  }
  if (is_word(s, a, b)) {  // a dictionary word: its characters
    for (int64_t i = a + 1; i <= b; ++i) ends.push_back(offset + i);
    return;
  }
  // finalseg.cut: Han runs through the Viterbi tagger; the rest split at
  // ([a-zA-Z0-9]+(?:\.\d+)?%?), every piece a word
  int64_t i = a;
  while (i < b) {
    int64_t j = i + 1;
    bool han = hmm_han(s[i]);
    while (j < b && hmm_han(s[j]) == han) ++j;
    if (han) {
      viterbi(s, i, j, offset, hmm, ends);
    } else {
      int64_t last = i, pos = i;
      while (pos < j) {
        if (!eng_char(s[pos])) {
          ++pos;
          continue;
        }
        int64_t e = pos;
        while (e < j && eng_char(s[e])) ++e;
        if (e + 1 < j && s[e] == '.' && ascii_digit(s[e + 1])) {
          e += 1;
          while (e < j && ascii_digit(s[e])) ++e;
        }
        if (e < j && s[e] == '%') ++e;
        if (pos > last) ends.push_back(offset + pos);
        ends.push_back(offset + e);
        last = pos = e;
      }
      if (last < j) ends.push_back(offset + j);
    }
    i = j;
  }
}

void Dictionary::viterbi(const uint32_t* s, int64_t a, int64_t b, int64_t offset, const Hmm& hmm,
                         std::vector<int64_t>& ends) const {
  // finalseg.viterbi over the tags B E M S (0-3, their order as characters breaks ties: Python's
  // max over (probability, tag) tuples), then finalseg.__cut's words
  static constexpr int PREV[4][2] = {{1, 3}, {0, 2}, {2, 0}, {3, 1}};  // B: ES, E: BM, M: MB, S: SE
  const int64_t n = b - a;
  auto emit = [&](int y, uint32_t c) { return hmm.emit[y][c - Hmm::HAN_LO]; };
  back_.assign(4 * n, 0);
  double v[4], w[4];
  for (int y = 0; y < 4; ++y) v[y] = hmm.start[y] + emit(y, s[a]);
  for (int64_t t = 1; t < n; ++t) {
    for (int y = 0; y < 4; ++y) {
      double em = emit(y, s[a + t]);
      double best = 0.0;
      int arg = -1;
      for (int k = 0; k < 2; ++k) {
        int y0 = PREV[y][k];
        double p = v[y0] + hmm.trans[y0][y] + em;
        if (arg < 0 || p > best || (p == best && y0 > arg)) best = p, arg = y0;
      }
      w[y] = best;
      back_[4 * t + y] = static_cast<int8_t>(arg);
    }
    for (int y = 0; y < 4; ++y) v[y] = w[y];
  }
  int state = (v[1] > v[3] || (v[1] == v[3] && 1 > 3)) ? 1 : 3;  // E or S; a tie goes to S
  std::vector<int8_t> tags(n);
  for (int64_t t = n - 1; t >= 0; --t) {
    tags[t] = static_cast<int8_t>(state);
    if (t) state = back_[4 * t + state];
  }
  int64_t next = 0;
  for (int64_t i = 0; i < n; ++i) {
    int tag = tags[i];
    if (tag == 1) {  // a word from the last B (always where the previous word ended)
      ends.push_back(offset + a + i + 1);
      next = i + 1;
    } else if (tag == 3) {
      ends.push_back(offset + a + i + 1);
      next = i + 1;
    }
  }
  if (next < n) ends.push_back(offset + b);
}

}  // namespace docpass
