#include "fluency.h"

#include <stdexcept>

namespace docpass {

namespace {

constexpr int32_t BOS = 1, EOS = 2;  // filters.quality.fluency: <unk> 0, <s> 1, </s> 2
constexpr uint32_t NEWLINE = 10, SPACE = 32;

inline uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7FB5D329728EA185ULL;
  x ^= x >> 27;
  x *= 0x81DADEF4BC2DD44DULL;
  x ^= x >> 33;
  return x;
}

}  // namespace

FluencyScorer::FluencyScorer(FluencyTables tables, const std::vector<const uint64_t*>& keys,
                             const std::vector<const float*>& log_prob, const std::vector<const float*>& backoff,
                             const std::vector<int64_t>& sizes)
    : t_(std::move(tables)) {
  power_.assign(t_.order + 1, 1);
  for (int k = 1; k <= t_.order; ++k) power_[k] = power_[k - 1] * t_.radix;
  for (size_t o = 0; o < keys.size(); ++o) {
    Table tab;
    tab.size = static_cast<uint64_t>(sizes[o] + sizes[o] / 3 + 16);  // load <= 0.75
    tab.slots = HugeArray<Slot>(tab.size, Slot{EMPTY, 0.0f, 0.0f});
    for (int64_t i = 0; i < sizes[o]; ++i) {
      uint64_t key = keys[o][i];
      if (key == EMPTY) throw std::invalid_argument("fluency model: an n-gram key equals the empty-slot marker");
      size_t s = slot_of(tab, key);
      while (tab.slots[s].key != EMPTY) s = s + 1 == tab.size ? 0 : s + 1;
      tab.slots[s] = Slot{key, log_prob[o][i], backoff[o] ? backoff[o][i] : 0.0f};
    }
    tables_.push_back(std::move(tab));
  }
}

size_t FluencyScorer::memory_bytes() const {
  size_t total = 0;
  for (const Table& t : tables_) total += t.slots.size() * sizeof(Slot);
  return total;
}

size_t FluencyScorer::slot_of(const Table& t, uint64_t key) {
  return static_cast<size_t>((static_cast<unsigned __int128>(mix(key)) * t.size) >> 64);
}

bool FluencyScorer::score(const uint32_t* codes, int64_t n, double& sum, int64_t& count) {
  if (t_.max_chars >= 0 && n > t_.max_chars) n = t_.max_chars;
  for (int64_t i = 0; i < n; ++i) {
    if (!t_.simple[codes[i]]) return false;
  }
  tmp_.clear();
  for (int64_t i = 0; i <= n; ++i) {
    uint32_t c = i < n ? codes[i] : NEWLINE;  // each text is followed by "\n"
    const uint32_t* out = t_.flat + t_.offset[c];
    for (uint8_t k = 0; k < t_.length[c]; ++k) tmp_.push_back(out[k]);
  }
  finish(sum, count);
  return true;
}

void FluencyScorer::score_folded(const uint32_t* codes, int64_t n, double& sum, int64_t& count) {
  tmp_.clear();
  for (int64_t i = 0; i < n; ++i) tmp_.push_back(t_.fold[codes[i]]);
  finish(sum, count);
}

void FluencyScorer::finish(double& sum, int64_t& count) {
  // normalised_codes: a space after a space, a line break or the start goes; then a space before
  // a line break or the end, and a line break after a line break or the start
  std::vector<uint32_t>& a = norm_;
  a.clear();
  for (size_t i = 0; i < tmp_.size(); ++i) {
    uint32_t prev = i ? tmp_[i - 1] : NEWLINE;
    if (tmp_[i] == SPACE && (prev == SPACE || prev == NEWLINE)) continue;
    a.push_back(tmp_[i]);
  }
  size_t m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t prev = i ? a[i - 1] : NEWLINE;
    uint32_t next = i + 1 < a.size() ? a[i + 1] : NEWLINE;
    if (a[i] == SPACE && next == NEWLINE) continue;
    if (a[i] == NEWLINE && prev == NEWLINE) continue;
    tmp_[m++] = a[i];  // tmp_ is read no more: reuse it
  }
  // encode: <s> before each sentence, </s> for its line break
  ids_.clear();
  bool start = true;
  for (size_t i = 0; i < m; ++i) {
    if (start) ids_.push_back(BOS);
    uint32_t c = tmp_[i];
    ids_.push_back(c == NEWLINE ? EOS : t_.id_of[c]);
    start = c == NEWLINE;
  }
  // NgramTables.score
  const int order = t_.order;
  const size_t T = ids_.size();
  best_.resize(T);
  longest_.assign(T, 1);
  const int rows = order > 1 ? order - 1 : 1;
  bo_.assign(T * rows, 0.0f);
  key_.resize(T);
  for (size_t t = 0; t < T; ++t) {
    best_[t] = t_.log_prob1[ids_[t]];
    bo_[t * rows] = t_.backoff1[ids_[t]];
  }
  at_.clear();
  for (size_t t = 1; t < T; ++t) {
    if (ids_[t] != BOS) {
      at_.push_back(static_cast<int64_t>(t));
      key_[t] = static_cast<uint64_t>(ids_[t - 1]) * t_.radix + static_cast<uint64_t>(ids_[t]);
    }
  }
  for (int n = 2; n <= order && !at_.empty(); ++n) {
    const Table& tab = tables_[n - 2];
    if (n > 2) {
      // where the (n-1)-gram was found and the n-gram's prefix (the (n-1)-gram ending at t-1) too
      next_at_.clear();
      for (int64_t t : at_) {
        if (longest_[t - 1] >= n - 1) {
          key_[t] += static_cast<uint64_t>(ids_[t - (n - 1)]) * power_[n - 1];
          next_at_.push_back(t);
        }
      }
      at_.swap(next_at_);
    }
    slot_.resize(at_.size());
    for (size_t i = 0; i < at_.size(); ++i) slot_[i] = slot_of(tab, key_[at_[i]]);
    next_at_.clear();
    constexpr size_t AHEAD = 24;
    for (size_t i = 0; i < at_.size(); ++i) {
      if (i + AHEAD < at_.size()) __builtin_prefetch(&tab.slots[slot_[i + AHEAD]]);
      int64_t t = at_[i];
      uint64_t key = key_[t];
      size_t s = slot_[i];
      while (tab.slots[s].key != key && tab.slots[s].key != EMPTY) s = s + 1 == tab.size ? 0 : s + 1;
      if (tab.slots[s].key != key) continue;
      best_[t] = tab.slots[s].log_prob;
      longest_[t] = static_cast<int8_t>(n);
      if (n < order) bo_[t * rows + (n - 1)] = tab.slots[s].backoff;
      next_at_.push_back(t);
    }
    at_.swap(next_at_);
  }
  // log10 p(t) = the longest stored n-gram's log-prob + the backoffs of the contexts ending at
  // t-1 at least as long as it: the float32 sums of the reference, from the highest order down
  double total = 0.0;
  int64_t scored = 0;
  for (size_t t = 1; t < T; ++t) {
    if (ids_[t] == BOS) continue;
    float s = 0.0f;
    const float* bo = &bo_[(t - 1) * rows];
    for (int j = order - 2; j >= longest_[t] - 1; --j) s = bo[j] + s;
    float v = best_[t] + s;
    total += static_cast<double>(v);
    ++scored;
  }
  sum = total;
  count = scored;
}

}  // namespace docpass
