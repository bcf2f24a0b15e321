// The character n-gram fluency model of filters/quality/fluency/, scored per document: normalise (the
// per-character tables of fluency._char_tables, whitespace folded as normalised_codes folds it),
// <s> c1 .. cn </s> per line, and KenLM's backoff query, float for float as NgramTables.score.
// The stored n-grams of each order sit in an open-addressing table of (key, log-prob, backoff)
// slots: a query is one cache line, and a document's queries of one order are issued together,
// prefetched ahead, so their memory latencies overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common.h"

namespace docpass {

struct FluencyTables {
  // per code point (0x110000 entries), from fluency._char_tables() and _fold_table()
  const uint8_t* simple = nullptr;
  const uint8_t* length = nullptr;
  const int64_t* offset = nullptr;
  const uint32_t* flat = nullptr;
  const uint32_t* fold = nullptr;
  const int32_t* id_of = nullptr;  // fluency.vocab_table
  uint64_t radix = 0;
  int order = 0;
  int64_t max_chars = -1;  // -1: no limit
  std::vector<float> log_prob1, backoff1;  // order 1, by token id
};

class FluencyScorer {
 public:
  // keys[n-2], log_prob[n-2], backoff[n-2] (backoff null for the highest order): order n >= 2
  FluencyScorer(FluencyTables tables, const std::vector<const uint64_t*>& keys,
                const std::vector<const float*>& log_prob, const std::vector<const float*>& backoff,
                const std::vector<int64_t>& sizes);

  // (sum of log10 p, predicted tokens) of codes[0:n] (a text, read to max_chars). False when a
  // character is not "simple": the caller normalises that text in Python and calls score_folded.
  bool score(const uint32_t* codes, int64_t n, double& sum, int64_t& count);
  // The same for a text already through fluency._nfkc_lower (its first max_chars and "\n").
  void score_folded(const uint32_t* codes, int64_t n, double& sum, int64_t& count);

  size_t memory_bytes() const;

 private:
  struct Slot {
    uint64_t key;
    float log_prob;
    float backoff;
  };
  struct Table {
    HugeArray<Slot> slots;
    uint64_t size = 0;
  };
  static constexpr uint64_t EMPTY = ~0ULL;
  static size_t slot_of(const Table& t, uint64_t key);
  void finish(double& sum, int64_t& count);  // whitespace folding, tokens, scoring of norm_

  FluencyTables t_;
  std::vector<Table> tables_;  // order n at n - 2
  std::vector<uint64_t> power_;  // radix ** k
  std::vector<uint32_t> norm_, tmp_;
  std::vector<int32_t> ids_;
  std::vector<int8_t> longest_;
  std::vector<float> best_, bo_;  // bo_: (order - 1) backoffs per position
  std::vector<uint64_t> key_;
  std::vector<int64_t> at_, next_at_;
  std::vector<size_t> slot_;
};

}  // namespace docpass
