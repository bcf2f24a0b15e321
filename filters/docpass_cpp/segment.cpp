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

void Dictionary::cut_block(const uint32_t* s, int64_t n, int64_t offset, std::vector<int64_t>& ends,
                           std::vector<uint32_t>* nodes) const {
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

}  // namespace docpass
