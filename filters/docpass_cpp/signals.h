// The label-free statistics of filters/quality/signals.py for one document (its prose), computed from one
// walk over its code points and its words: the same values, float for float, as the numpy
// reference (which runs a chunk of documents joined by "\n" at a time; chunk-local state, the
// document's index in its chunk, is passed in).
#pragma once

#include <cstdint>
#include <vector>

namespace docpass {

// Output columns, in filters.quality.signals.SIGNAL_NAMES order less contact_density (Python's).
enum Sig {
  LINE_PUNCT, SHORT_LINE, SEPARATOR_LINE, DATE_LINE, DUP_LINE, DUP_PARA,
  TOP2, TOP3, TOP4, DUP5, DUP6, DUP7, DUP8, DUP9, DUP10,
  FW_RATIO, FW_DISTINCT, SYMBOL_RATIO, DIGIT_RATIO, LATIN_RATIO, PUNCT_RATIO, HAN_RATIO,
  N_SIG
};

struct SignalParams {
  const uint8_t* table = nullptr;  // filters.quality.signals.char_table(): category bits 0-2, END 8, CLOSE 16, SEP 32
  std::vector<uint64_t> function_words;  // sorted substring keys of FUNCTION_WORDS
  int64_t short_line_chars = 10;
  double separator_share = 0.3;
  int64_t menu_min_items = 3;
  int64_t menu_max_item_chars = 8;
  int max_closers = 3;
  int64_t date_max = 11;
};

struct DocResult {
  float sig[N_SIG];
  int64_t visible;  // visible characters: contact_density's denominator
};

class SignalPass {
 public:
  explicit SignalPass(SignalParams params) : p_(std::move(params)) {}

  // codes[0:n] is the document, word_ends its cut (jieba, HMM off); doc: its index in its chunk;
  // rows: the document's lines (0-based, empty lines counted) that are Markdown table rows, sorted.
  void compute(const uint32_t* codes, int64_t n, const std::vector<int64_t>& word_ends, const int64_t* rows,
               int64_t n_rows, uint64_t doc, DocResult& out);

 private:
  struct Line {
    int64_t chars;
    uint64_t key;  // doc-mixed key of the stripped line
    bool is_first;
  };
  struct Cells {  // what the rows of a Markdown table hold (lines() counts it)
    int64_t symbols = 0, figures = 0, stamped = 0;  // SYMBOL and DIGIT characters, digits of stamps
  };
  void lines(const uint32_t* c, int64_t n, const int64_t* rows, int64_t n_rows, uint64_t doc, DocResult& out);
  void words(const uint32_t* c, const std::vector<int64_t>& word_ends, uint64_t doc, DocResult& out);
  void ngrams(uint64_t doc, int64_t word_chars, DocResult& out);
  double covered(std::vector<int64_t>& starts, int n) const;
  double dup_chars(const std::vector<std::pair<uint64_t, int64_t>>& items);
  bool dated(const uint32_t* c, int64_t ls, int64_t le) const;
  int64_t stamp_digits(const uint32_t* c, int64_t n) const;

  SignalParams p_;
  std::vector<Line> lines_;
  Cells cells_;
  std::vector<uint64_t> hashes_;  // kept words' keys
  std::vector<int64_t> csum_;     // cumulative kept word lengths, from 0
  std::vector<uint64_t> key_;
  std::vector<int64_t> cand_, next_cand_, starts_;
  std::vector<std::pair<uint64_t, int64_t>> groups_, order_;
  std::vector<uint8_t> is_rep_, fw_seen_, stamped_;
};

}  // namespace docpass
