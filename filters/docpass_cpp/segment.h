// jieba 0.42.1's precise mode with HMM off (jieba.lcut(text, HMM=False)), word boundaries only:
// the prefix dictionary of jieba's dict.txt, the DAG of dictionary words at each position, the
// route of highest log-probability (ties: the longer word), single ASCII letters and digits
// merged into runs. filters/text/segment.py holds rjieba and jieba as references; tests/test_docpass.py
// holds this cut equal to theirs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

namespace docpass {

// jieba's finalseg (the HMM of unknown words): BMES tags, log-probabilities of its start, its
// transitions (MIN_FLOAT where none) and of each character of U+4E00..U+9FD5 in each tag.
struct Hmm {
  static constexpr uint32_t HAN_LO = 0x4E00, HAN_HI = 0x9FD5;
  double start[4];
  double trans[4][4];
  std::vector<double> emit[4];  // (HAN_HI - HAN_LO + 1) each
};

class Dictionary {
 public:
  // jieba's gen_pfdict over the lines of dict.txt ("word freq [tag]"): every word and each of its
  // prefixes is a node; a node's frequency is the last line's for a word, 0 for a bare prefix.
  explicit Dictionary(const std::string& text);

  // Word end positions (exclusive) of jieba.lcut(codes[0:n], HMM=False), appended to `ends`; with
  // `nodes`, each word's dictionary node (a word of the dictionary), or NONE, appended there.
  void cut(const uint32_t* codes, int64_t n, std::vector<int64_t>& ends, std::vector<uint32_t>* nodes = nullptr) const;

  // The same with HMM on (jieba.lcut(text, HMM=True)): single-character route steps collect into
  // a buffer, and a buffer that is no dictionary word goes through finalseg (`hmm`).
  void cut_hmm(const uint32_t* codes, int64_t n, const Hmm& hmm, std::vector<int64_t>& ends) const;

  size_t nodes() const { return weight_.size(); }
  // A node reference: its id, with WORD set when it is a word with a frequency (get_DAG keeps it)
  static constexpr uint32_t NONE = 0xFFFFFFFFu, WORD = 0x80000000u;

 private:
  struct Slot {
    uint64_t key;  // (parent << 21 | code point) + 1; 0 = empty
    uint32_t child;
    uint32_t pad;
  };
  struct Edge {
    uint32_t cp;     // NONE = empty
    uint32_t child;  // with WORD
  };
  struct Children {
    uint32_t offset;  // of the node's own open-addressing table in edges_
    uint32_t size;    // a power of two, or 0: no children
  };
  uint32_t child(uint32_t node, uint32_t cp) const;  // node: an id without WORD
  uint32_t build_child(uint32_t node, uint32_t cp) const;
  uint32_t add_child(uint32_t node, uint32_t cp);
  void grow();
  void pack();
  void cut_block(const uint32_t* codes, int64_t n, int64_t offset, std::vector<int64_t>& ends,
                 std::vector<uint32_t>* nodes) const;
  void route(const uint32_t* codes, int64_t n) const;  // calc: next_ and next_node_
  void cut_block_hmm(const uint32_t* s, int64_t n, int64_t offset, const Hmm& hmm, std::vector<int64_t>& ends) const;
  void flush_hmm(const uint32_t* s, int64_t a, int64_t b, int64_t offset, const Hmm& hmm,
                 std::vector<int64_t>& ends) const;
  void viterbi(const uint32_t* s, int64_t a, int64_t b, int64_t offset, const Hmm& hmm,
               std::vector<int64_t>& ends) const;
  bool is_word(const uint32_t* s, int64_t a, int64_t b) const;

  std::vector<uint32_t> root_;  // code point -> child of the root (planes 0-2), NONE if absent
  std::vector<Slot> slots_;     // the other edges while building (one table, open addressing)
  // then, per node, a small table of its own children: a hot node's children stay in cache
  std::vector<Children> children_;
  HugeArray<Edge> edges_;
  size_t used_ = 0;
  std::vector<int64_t> freq_;   // per node
  std::vector<double> weight_;  // per node: log(freq or 1) - log(total), as jieba's calc
  double log_total_ = 0.0;
  mutable std::vector<double> score_;
  mutable std::vector<int64_t> next_;
  mutable std::vector<uint32_t> next_node_;
  mutable std::vector<int8_t> back_;  // viterbi back pointers, 4 per position
};

}  // namespace docpass
