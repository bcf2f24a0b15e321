// filters._docpass: the compiled per-document pass (filters/docpass.py wraps it; the Python
// modules it mirrors stay the reference: filters.quality.signals, filters.quality.fluency, filters.text.segment with
// rjieba/jieba, filters.tokenizer.presegment). Texts come in as Arrow string buffers (int64
// offsets, UTF-8 bytes) and results go out as numpy arrays: no Python object per document,
// except the pre-segmented strings SentencePiece reads.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <string>
#include <tuple>
#include <vector>

#include "common.h"
#include "fluency.h"
#include "segment.h"
#include "signals.h"

namespace py = pybind11;
using namespace docpass;

namespace {

template <typename T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

// Arrow-style strings: offsets (n + 1, int64) into UTF-8 bytes
struct Strings {
  const int64_t* offsets;
  const uint8_t* data;
  int64_t n;
  Strings(const Array<int64_t>& offsets_, const py::buffer& data_) {
    py::buffer_info info = data_.request();
    offsets = offsets_.data();
    data = static_cast<const uint8_t*>(info.ptr);
    n = static_cast<int64_t>(offsets_.size()) - 1;
  }
  const uint8_t* at(int64_t i) const { return data + offsets[i]; }
  size_t size(int64_t i) const { return static_cast<size_t>(offsets[i + 1] - offsets[i]); }
};

// Whether a text holds one of `hints` (filters.text.markdown._MARKUP_HINTS: a text without one is its
// own prose), in one scan of its bytes: the hints are looked up by their first byte.
class Hints {
 public:
  explicit Hints(const std::vector<std::string>& hints) : by_first_(256) {
    for (const std::string& h : hints) {
      if (!h.empty()) by_first_[static_cast<uint8_t>(h[0])].push_back(h);
    }
  }
  bool any(const uint8_t* p, size_t n) const {
    for (size_t i = 0; i < n; ++i) {
      for (const std::string& h : by_first_[p[i]]) {
        if (h.size() <= n - i && std::equal(h.begin(), h.end(), reinterpret_cast<const char*>(p + i))) return true;
      }
    }
    return false;
  }

 private:
  std::vector<std::vector<std::string>> by_first_;
};

constexpr uint8_t DIGIT_LIKE = 1, ID_CHAR = 2;  // filters.quality.contact._char_kinds

// Whether c[i:] starts with the ASCII string s.
inline bool starts_with(const uint32_t* c, int64_t n, int64_t i, const char* s) {
  for (; *s; ++s, ++i) {
    if (i >= n || c[i] != static_cast<uint32_t>(*s)) return false;
  }
  return true;
}

// Whether filters.quality.contact can find anything in the text: a cluster of >= min_digits
// digit-like characters at most 3 apart, a run of >= 6 id characters, "://", "www" in any case,
// a dot (or 点) between id characters, an @, a placeholder of a redacted contact
// (filters.quality.contact.REDACTED).
bool contact_candidate(const uint32_t* c, int64_t n, const uint8_t* kinds, int64_t min_digits) {
  int64_t cluster = 0, last_digit = -100, run = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (c[i] == '<' && (starts_with(c, n, i, "<PHONE>") || starts_with(c, n, i, "<EMAIL>"))) return true;
    uint8_t k = kinds[c[i]];
    if (k & DIGIT_LIKE) {
      cluster = i - last_digit <= 3 ? cluster + 1 : 1;
      last_digit = i;
      if (cluster >= min_digits) return true;
    }
    run = (k & ID_CHAR) ? run + 1 : 0;
    if (run >= 6) return true;
    uint32_t x = c[i];
    if (x == '@' || x == 0xFF20) return true;
    if (x == ':' && i + 2 < n && c[i + 1] == '/' && c[i + 2] == '/') return true;
    if ((x == 'w' || x == 'W') && i + 2 < n && (c[i + 1] | 0x20) == 'w' && (c[i + 2] | 0x20) == 'w') return true;
    if ((x == '.' || x == 0x70B9) && i > 0 && i + 1 < n && (kinds[c[i - 1]] & ID_CHAR) && (kinds[c[i + 1]] & ID_CHAR)) {
      return true;
    }
  }
  return false;
}

// SentencePiece ids of pre-segmented words, for one tokenizer. SentencePiece (split by whitespace)
// encodes each ' '-led word of a pre-segmented text on its own, so a text's ids are its words' ids
// in order: each distinct word is encoded once (by the tokenizer, in Python) and kept here. A word
// is known by its dictionary node (most words), its code point (another single character), or its
// spelling (ASCII runs, "\r\n"); led by a space or not (the first word of a text).
class WordIds {
 public:
  enum Kind { NODE, CHAR, TEXT };
  static constexpr uint32_t NONE = 0xFFFFFFFFu;
  static constexpr size_t MAX_IDS = size_t(1) << 26;  // ~256 MB of ids at most: then start again
  // key: (node or code point) * 2 + led by a space (NODE, CHAR); spelled: the word (TEXT)
  uint32_t find(Kind kind, uint64_t key, const std::string& spelled) const {
    if (kind == NODE) return key < by_node_.size() ? by_node_[key] : NONE;
    if (kind == CHAR) {
      auto it = by_char_.find(key);
      return it == by_char_.end() ? NONE : it->second;
    }
    auto it = by_text_.find(spelled);
    return it == by_text_.end() ? NONE : it->second;
  }
  uint32_t add(Kind kind, uint64_t key, const std::string& spelled, const std::vector<int32_t>& ids) {
    uint32_t entry = static_cast<uint32_t>(spans_.size());
    spans_.push_back({arena_.size(), ids.size()});
    arena_.insert(arena_.end(), ids.begin(), ids.end());
    if (kind == NODE) {
      if (key >= by_node_.size()) by_node_.resize(key + 1, NONE);
      by_node_[key] = entry;
    } else if (kind == CHAR) {
      by_char_[key] = entry;
    } else {
      by_text_[spelled] = entry;
    }
    return entry;
  }
  void append(uint32_t entry, std::vector<int32_t>& out) const {
    const auto& s = spans_[entry];
    out.insert(out.end(), arena_.begin() + s.first, arena_.begin() + s.first + s.second);
  }
  bool full() const { return arena_.size() > MAX_IDS; }
  void clear() {
    by_node_.clear();
    by_char_.clear();
    by_text_.clear();
    spans_.clear();
    arena_.clear();
  }
  size_t size() const { return spans_.size(); }

 private:
  std::vector<uint32_t> by_node_;
  std::unordered_map<uint64_t, uint32_t> by_char_;
  std::unordered_map<std::string, uint32_t> by_text_;
  std::vector<std::pair<size_t, size_t>> spans_;
  std::vector<int32_t> arena_;
};

// filters.tokenizer.presegment's spelling of codes[a:b]: ' ' -> U+2582, '\n' -> U+2583, led by ' '
inline void spell(const uint32_t* codes, int64_t a, int64_t b, bool space, std::string& out) {
  out.clear();
  if (space) out.push_back(' ');
  for (int64_t j = a; j < b; ++j) append_utf8(out, codes[j] == ' ' ? 0x2582 : codes[j] == '\n' ? 0x2583 : codes[j]);
}

class Engine {
 public:
  Engine(const std::string& dictionary, Array<uint8_t> quality_table, Array<uint64_t> function_words,
         Array<uint8_t> contact_kinds, const std::vector<std::string>& markup_hints, py::dict params)
      : dict_(dictionary), quality_table_(quality_table), contact_kinds_(contact_kinds), hints_(markup_hints) {
    SignalParams p;
    p.table = quality_table_.data();
    p.function_words.assign(function_words.data(), function_words.data() + function_words.size());
    p.short_line_chars = params["short_line_chars"].cast<int64_t>();
    p.separator_share = params["separator_share"].cast<double>();
    p.menu_min_items = params["menu_min_items"].cast<int64_t>();
    p.menu_max_item_chars = params["menu_max_item_chars"].cast<int64_t>();
    p.max_closers = params["max_closers"].cast<int>();
    p.date_max = params["date_max"].cast<int64_t>();
    chunk_chars_ = params["chunk_chars"].cast<int64_t>();
    min_id_digits_ = params["min_id_digits"].cast<int64_t>();
    signals_ = std::make_unique<SignalPass>(std::move(p));
  }

  void set_fluency(py::dict tables, py::list keys, py::list log_prob, py::list backoff) {
    // the per-code-point tables are read in place: kept alive here
    simple_ = Array<uint8_t>(tables["simple"]);
    length_ = Array<uint8_t>(tables["length"]);
    offset_ = Array<int64_t>(tables["offset"]);
    flat_ = Array<uint32_t>(tables["flat"]);
    fold_ = Array<uint32_t>(tables["fold"]);
    id_of_ = Array<int32_t>(tables["id_of"]);
    FluencyTables t;
    t.simple = simple_.data();
    t.length = length_.data();
    t.offset = offset_.data();
    t.flat = flat_.data();
    t.fold = fold_.data();
    t.id_of = id_of_.data();
    t.radix = tables["radix"].cast<uint64_t>();
    t.order = tables["order"].cast<int>();
    t.max_chars = tables["max_chars"].cast<int64_t>();
    Array<float> lp1(tables["log_prob_1"]), bo1(tables["backoff_1"]);
    t.log_prob1.assign(lp1.data(), lp1.data() + lp1.size());
    t.backoff1.assign(bo1.data(), bo1.data() + bo1.size());
    // orders >= 2 are copied into the scorer's hash tables
    std::vector<const uint64_t*> k;
    std::vector<const float*> lp, bo;
    std::vector<int64_t> sizes;
    std::vector<Array<uint64_t>> hold_k;
    std::vector<Array<float>> hold_f;
    hold_k.reserve(keys.size());
    hold_f.reserve(2 * keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      hold_k.emplace_back(keys[i]);
      hold_f.emplace_back(log_prob[i]);
      k.push_back(hold_k.back().data());
      lp.push_back(hold_f.back().data());
      sizes.push_back(static_cast<int64_t>(hold_k.back().size()));
      if (backoff[i].is_none()) {
        bo.push_back(nullptr);
      } else {
        hold_f.emplace_back(backoff[i]);
        bo.push_back(hold_f.back().data());
      }
    }
    fluency_ = std::make_unique<FluencyScorer>(std::move(t), k, lp, bo, sizes);
  }

  // jieba's finalseg tables: start (4), trans (4 x 4), emit (4 x the Han range), tags B E M S
  void set_hmm(Array<double> start, Array<double> trans, Array<double> emit) {
    auto h = std::make_unique<Hmm>();
    const size_t span = Hmm::HAN_HI - Hmm::HAN_LO + 1;
    if (start.size() != 4 || trans.size() != 16 || emit.size() != 4 * span) throw std::invalid_argument("HMM table shapes");
    for (int y = 0; y < 4; ++y) {
      h->start[y] = start.data()[y];
      for (int z = 0; z < 4; ++z) h->trans[y][z] = trans.data()[4 * y + z];
      h->emit[y].assign(emit.data() + y * span, emit.data() + (y + 1) * span);
    }
    hmm_ = std::move(h);
  }

  // The classifiers' text tables: NFKC + lower case per "simple" character (fluency's
  // nfkc_lower_tables, unfolded) and a class per code point: SPACE (str.isspace), WORD
  // (str.isalnum), SENTENCE (filters.classifiers.classify.SENTENCE_PUNCT)
  static constexpr uint8_t SPACE = 1, WORD = 2, SENTENCE = 4;
  void set_classify(Array<uint8_t> simple, Array<uint8_t> length, Array<int64_t> offset, Array<uint32_t> flat,
                    Array<uint8_t> classes, int64_t max_chars) {
    c_simple_ = simple, c_length_ = length, c_offset_ = offset, c_flat_ = flat, c_class_ = classes;
    c_max_chars_ = max_chars;
  }

  // jieba HMM-on words: (lengths of every word, words per text)
  py::tuple cut_hmm(Array<int64_t> offsets, py::buffer data) {
    if (!hmm_) throw std::runtime_error("no HMM: call set_hmm first");
    return word_lengths(offsets, data, [this](const uint32_t* c, int64_t n) { dict_.cut_hmm(c, n, *hmm_, ends_); });
  }

  // filters.classifiers.classify.preprocess of each text's prose (main, or alt where alt_index >= 0): the first
  // max_chars characters, NFKC and lower case, whitespace folded, jieba's HMM-on words that are
  // words (filters.classifiers.classify.is_word) joined by spaces. None where a character is not "simple"
  // (Python normalises that text).
  py::list classify_lines(Array<int64_t> offsets, py::buffer data, Array<int64_t> alt_index, Array<int64_t> alt_offsets,
                          py::buffer alt_data) {
    if (!hmm_ || !c_simple_.size()) throw std::runtime_error("call set_hmm and set_classify first");
    Strings main(offsets, data), alt(alt_offsets, alt_data);
    const int64_t* alt_i = alt_index.data();
    const uint8_t *simple = c_simple_.data(), *length = c_length_.data(), *cls = c_class_.data();
    const int64_t* offset = c_offset_.data();
    const uint32_t* flat = c_flat_.data();
    py::list out(main.n);
    std::vector<uint32_t> folded;
    for (int64_t i = 0; i < main.n; ++i) {
      bool ok = true;
      {
        py::gil_scoped_release release;
        const bool a = alt_i[i] >= 0;
        decode_utf8(a ? alt.at(alt_i[i]) : main.at(i), a ? alt.size(alt_i[i]) : main.size(i), codes_,
                    c_max_chars_ >= 0 ? static_cast<size_t>(c_max_chars_) : SIZE_MAX);
        tmp_.clear();
        for (uint32_t c : codes_) {
          if (!simple[c]) {
            ok = false;
            break;
          }
          for (uint8_t k = 0; k < length[c]; ++k) tmp_.push_back(flat[offset[c] + k]);
        }
        if (ok) {
          // " ".join(head.split())
          folded.clear();
          for (uint32_t c : tmp_) {
            if (cls[c] & SPACE) {
              if (!folded.empty() && folded.back() != ' ') folded.push_back(' ');
            } else {
              folded.push_back(c);
            }
          }
          if (!folded.empty() && folded.back() == ' ') folded.pop_back();
          ends_.clear();
          dict_.cut_hmm(folded.data(), static_cast<int64_t>(folded.size()), *hmm_, ends_);
          text_.clear();
          int64_t prev = 0;
          for (int64_t e : ends_) {
            // the words: space words left out, and tokens with no letter or digit unless all
            // sentence punctuation
            uint8_t any = 0, all = SENTENCE;
            for (int64_t j = prev; j < e; ++j) any |= cls[folded[j]], all &= cls[folded[j]];
            if (!(e - prev == 1 && folded[prev] == ' ') && ((any & WORD) || all)) {
              if (!text_.empty()) text_.push_back(' ');
              for (int64_t j = prev; j < e; ++j) append_utf8(text_, folded[j]);
            }
            prev = e;
          }
        }
      }
      if (ok) {
        out[i] = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(text_.data(), text_.size(), "strict"));
      } else {
        out[i] = py::none();
      }
    }
    return out;
  }

  // filters.quality.crawl_repeat.batch_keys: per text, its distinct sampled span keys and clause keys
  // (sorted by kind, then key as unsigned) with the characters a clause covers and the context each is
  // held in (its long sentence's identity, or the text's), its identity and its letters and digits;
  // `alnum`: the reference's mask per code point. Texts with a character the NFKC tables cannot map
  // are flagged (`python`) and left out: Python cuts them. `sentence_ends`: the code points that end a
  // sentence in the normalised text (crawl_repeat.SENTENCE_ENDS).
  py::tuple template_keys(Array<int64_t> offsets, py::buffer data, Array<uint8_t> alnum, int ngram, int modulus,
                          int min_clause, int min_copy, Array<uint32_t> sentence_ends) {
    if (!c_simple_.size()) throw std::runtime_error("call set_classify first");
    constexpr uint64_t CLAUSE_TAG = 0x5BD1E9955BD1E995ULL;
    Strings s(offsets, data);
    const uint8_t *simple = c_simple_.data(), *length = c_length_.data(), *mask = alnum.data();
    const int64_t* offset = c_offset_.data();
    const uint32_t* flat = c_flat_.data();
    std::vector<int64_t> doc, kind, weight, context;
    std::vector<uint64_t> keys;
    Array<int64_t> ident(s.n), chars(s.n);
    Array<uint8_t> python(s.n);
    int64_t *id_p = ident.mutable_data(), *ch_p = chars.mutable_data();
    uint8_t* py_p = python.mutable_data();
    const std::vector<uint32_t> ends(sentence_ends.data(), sentence_ends.data() + sentence_ends.size());
    auto sentence_end = [&ends](uint32_t x) { return std::find(ends.begin(), ends.end(), x) != ends.end(); };
    {
      py::gil_scoped_release release;
      std::vector<uint32_t> seq;
      std::vector<int64_t> pos, sentence, ctx;
      std::vector<std::pair<uint64_t, int64_t>> spans;
      std::vector<std::tuple<uint64_t, int64_t, int64_t>> clauses;
      for (int64_t i = 0; i < s.n; ++i) {
        decode_utf8(s.at(i), s.size(i), codes_);
        py_p[i] = 0;
        id_p[i] = 0;
        ch_p[i] = 0;
        seq.clear();
        pos.clear();
        sentence.clear();
        int64_t p = 0, sent = 0;
        bool ok = true;
        for (uint32_t c : codes_) {
          if (!simple[c]) {
            ok = false;
            break;
          }
          for (uint8_t k = 0; k < length[c]; ++k, ++p) {
            uint32_t x = flat[offset[c] + k];
            if (mask[x]) {
              seq.push_back(x >= '0' && x <= '9' ? '0' : x);
              pos.push_back(p);
              sentence.push_back(sent);
            } else if (sentence_end(x)) {
              ++sent;
            }
          }
        }
        if (!ok) {
          py_p[i] = 1;
          continue;
        }
        const int64_t m = static_cast<int64_t>(seq.size());
        const int64_t me = static_cast<int64_t>(substring_key(seq.data(), 0, m) >> 1);
        ch_p[i] = m;
        id_p[i] = me;
        ctx.assign(m, me);
        if (min_copy > 0) {
          for (int64_t a = 0; a < m;) {
            int64_t b = a + 1;
            while (b < m && sentence[b] == sentence[a]) ++b;
            if (b - a >= min_copy) {
              const int64_t c = static_cast<int64_t>(substring_key(seq.data(), a, b) >> 1);
              std::fill(ctx.begin() + a, ctx.begin() + b, c);
            }
            a = b;
          }
        }
        // a key held in one context in the text keeps it; in two, the text is its context
        auto held_in = [me](int64_t lo, int64_t hi) { return lo == hi ? lo : me; };
        spans.clear();
        for (int64_t a = 0; a + ngram <= m; ++a) {
          uint64_t k = substring_key(seq.data(), a, a + ngram);
          if (modulus <= 1 || (k >> 40) % static_cast<uint64_t>(modulus) == 0) spans.push_back({k, ctx[a]});
        }
        std::sort(spans.begin(), spans.end());
        for (size_t a = 0; a < spans.size();) {
          size_t b = a + 1;
          while (b < spans.size() && spans[b].first == spans[a].first) ++b;
          doc.push_back(i), kind.push_back(0), keys.push_back(spans[a].first), weight.push_back(1);
          context.push_back(held_in(spans[a].second, spans[b - 1].second));
          a = b;
        }
        clauses.clear();
        if (min_clause > 0) {
          for (int64_t a = 0; a < m;) {
            int64_t b = a + 1;
            while (b < m && pos[b] == pos[b - 1] + 1) ++b;
            if (b - a >= min_clause) clauses.emplace_back(substring_key(seq.data(), a, b) ^ CLAUSE_TAG, ctx[a], b - a);
            a = b;
          }
          std::sort(clauses.begin(), clauses.end());
        }
        for (size_t a = 0; a < clauses.size();) {
          size_t b = a;
          int64_t w = 0;
          while (b < clauses.size() && std::get<0>(clauses[b]) == std::get<0>(clauses[a])) w += std::get<2>(clauses[b++]);
          doc.push_back(i), kind.push_back(1), keys.push_back(std::get<0>(clauses[a])), weight.push_back(w);
          context.push_back(held_in(std::get<1>(clauses[a]), std::get<1>(clauses[b - 1])));
          a = b;
        }
      }
    }
    Array<int64_t> key_out(keys.size());
    std::memcpy(key_out.mutable_data(), keys.data(), keys.size() * sizeof(uint64_t));
    return py::make_tuple(Array<int64_t>(doc.size(), doc.data()), Array<int64_t>(kind.size(), kind.data()), key_out,
                          Array<int64_t>(weight.size(), weight.data()), ident, chars, python,
                          Array<int64_t>(context.size(), context.data()));
  }

  size_t fluency_bytes() const { return fluency_ ? fluency_->memory_bytes() : 0; }
  size_t dictionary_nodes() const { return dict_.nodes(); }

  Array<uint8_t> markup(Array<int64_t> offsets, py::buffer data) {
    Strings s(offsets, data);
    Array<uint8_t> out(s.n);
    auto o = out.mutable_data();
    {
      py::gil_scoped_release release;
      for (int64_t i = 0; i < s.n; ++i) o[i] = hints_.any(s.at(i), s.size(i));
    }
    return out;
  }

  // jieba HMM-off words: (lengths of every word, words per text)
  py::tuple cut(Array<int64_t> offsets, py::buffer data) {
    return word_lengths(offsets, data, [this](const uint32_t* c, int64_t n) { dict_.cut(c, n, ends_); });
  }

 private:
  // (lengths of every word, words per text) of each text cut by ``cut`` (which fills ends_)
  template <typename Cut>
  py::tuple word_lengths(Array<int64_t> offsets, py::buffer data, Cut cut) {
    Strings s(offsets, data);
    std::vector<int64_t> lengths, per_text(s.n);
    {
      py::gil_scoped_release release;
      for (int64_t i = 0; i < s.n; ++i) {
        decode_utf8(s.at(i), s.size(i), codes_);
        ends_.clear();
        cut(codes_.data(), static_cast<int64_t>(codes_.size()));
        int64_t prev = 0;
        for (int64_t e : ends_) {
          lengths.push_back(e - prev);
          prev = e;
        }
        per_text[i] = static_cast<int64_t>(ends_.size());
      }
    }
    return py::make_tuple(Array<int64_t>(lengths.size(), lengths.data()), Array<int64_t>(per_text.size(), per_text.data()));
  }

 public:

  // filters.tokenizer.presegment: the words, ' ' -> U+2582 and '\n' -> U+2583, joined by ' '
  py::list presegment(Array<int64_t> offsets, py::buffer data) {
    Strings s(offsets, data);
    py::list out(s.n);
    for (int64_t i = 0; i < s.n; ++i) {
      {
        py::gil_scoped_release release;
        decode_utf8(s.at(i), s.size(i), codes_);
        ends_.clear();
        dict_.cut(codes_.data(), static_cast<int64_t>(codes_.size()), ends_);
        text_.clear();
        int64_t prev = 0;
        for (int64_t e : ends_) {
          if (prev) text_.push_back(' ');
          for (int64_t j = prev; j < e; ++j) {
            uint32_t c = codes_[j];
            append_utf8(text_, c == ' ' ? 0x2582 : c == '\n' ? 0x2583 : c);
          }
          prev = e;
        }
      }
      out[i] = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(text_.data(), text_.size(), "strict"));
    }
    return out;
  }

  // Token ids of filters.tokenizer.presegment(text) for each text: (list offsets, ids), int32,
  // Arrow's list<int32> layout. `encode` (SentencePiece, on a list of str) gives the ids of the
  // words `cache` does not hold yet, all of a batch's at once.
  py::tuple encode(WordIds& cache, Array<int64_t> offsets, py::buffer data, py::function encode) {
    Strings s(offsets, data);
    if (cache.full()) cache.clear();
    struct Missing {
      WordIds::Kind kind;
      uint64_t key;
      std::string spelled;
    };
    constexpr uint32_t PENDING = 0x80000000u;
    std::vector<uint32_t> entries;  // per word of the batch, in order: a cache entry or PENDING | missing
    std::vector<int64_t> words_per_text(s.n);
    std::vector<Missing> missing;   // words to encode, first seen first
    std::unordered_map<uint64_t, uint32_t> pending_key[2];  // NODE, CHAR
    std::unordered_map<std::string, uint32_t> pending_text;
    {
      py::gil_scoped_release release;
      std::string spelled;
      for (int64_t i = 0; i < s.n; ++i) {
        decode_utf8(s.at(i), s.size(i), codes_);
        ends_.clear();
        nodes_.clear();
        dict_.cut(codes_.data(), static_cast<int64_t>(codes_.size()), ends_, &nodes_);
        int64_t prev = 0;
        for (size_t w = 0; w < ends_.size(); ++w) {
          const int64_t e = ends_[w];
          const bool space = prev > 0;
          WordIds::Kind kind = nodes_[w] != Dictionary::NONE ? WordIds::NODE : e - prev == 1 ? WordIds::CHAR : WordIds::TEXT;
          uint64_t key = kind == WordIds::NODE ? uint64_t(nodes_[w]) * 2 + space
                         : kind == WordIds::CHAR ? uint64_t(codes_[prev]) * 2 + space
                                                 : 0;
          if (kind == WordIds::TEXT) spell(codes_.data(), prev, e, space, spelled);
          uint32_t entry = cache.find(kind, key, spelled);
          if (entry == WordIds::NONE) {
            const uint32_t next = static_cast<uint32_t>(missing.size());
            uint32_t k;
            bool added;
            if (kind == WordIds::TEXT) {
              auto r = pending_text.emplace(spelled, next);
              k = r.first->second, added = r.second;
            } else {
              auto r = pending_key[kind].emplace(key, next);
              k = r.first->second, added = r.second;
            }
            if (added) {
              if (kind != WordIds::TEXT) spell(codes_.data(), prev, e, space, spelled);
              missing.push_back({kind, key, spelled});
            }
            entry = PENDING | k;
          }
          entries.push_back(entry);
          prev = e;
        }
        words_per_text[i] = static_cast<int64_t>(ends_.size());
      }
    }
    std::vector<uint32_t> resolved(missing.size());
    if (!missing.empty()) {
      py::list words(missing.size());
      for (size_t k = 0; k < missing.size(); ++k) {
        const std::string& w = missing[k].spelled;
        words[k] = py::reinterpret_steal<py::object>(
            PyUnicode_DecodeUTF8(w.data(), static_cast<Py_ssize_t>(w.size()), "strict"));
      }
      py::list ids = encode(words);
      if (ids.size() != missing.size()) throw std::runtime_error("encode returned another number of texts");
      std::vector<int32_t> buf;
      for (size_t k = 0; k < missing.size(); ++k) {
        buf.clear();
        for (py::handle x : ids[k]) buf.push_back(x.cast<int32_t>());
        resolved[k] = cache.add(missing[k].kind, missing[k].key, missing[k].spelled, buf);
      }
    }
    std::vector<int32_t> values;
    Array<int32_t> list_offsets(s.n + 1);
    int32_t* lo = list_offsets.mutable_data();
    lo[0] = 0;
    size_t w = 0;
    for (int64_t i = 0; i < s.n; ++i) {
      for (int64_t k = 0; k < words_per_text[i]; ++k, ++w) {
        uint32_t entry = entries[w];
        cache.append(entry & PENDING ? resolved[entry & ~PENDING] : entry, values);
      }
      if (values.size() > static_cast<size_t>(INT32_MAX)) throw std::runtime_error("over 2**31 tokens in a batch");
      lo[i + 1] = static_cast<int32_t>(values.size());
    }
    return py::make_tuple(list_offsets, Array<int32_t>(values.size(), values.data()));
  }

  // Every signal of the texts' prose (main, or alt where alt_index >= 0), their contact candidacy,
  // chunks, and (with a fluency model) its log-prob sums and token counts.
  py::tuple quality(Array<int64_t> offsets, py::buffer data, Array<int64_t> alt_index, Array<int64_t> alt_offsets,
                    py::buffer alt_data, Array<int64_t> row_offsets, Array<int64_t> rows, bool with_fluency) {
    Strings main(offsets, data), alt(alt_offsets, alt_data);
    const int64_t n = main.n;
    const int64_t* alt_i = alt_index.data();
    auto text = [&](int64_t i, const uint8_t*& p, size_t& size) {
      if (alt_i[i] >= 0) {
        p = alt.at(alt_i[i]);
        size = alt.size(alt_i[i]);
      } else {
        p = main.at(i);
        size = main.size(i);
      }
    };
    Array<float> sig({n, static_cast<int64_t>(N_SIG)});
    Array<int64_t> visible(n), chunk(n), counts(n);
    Array<uint8_t> contact(n), python(n);
    Array<double> sums(n);
    float* sig_p = sig.mutable_data();
    int64_t *vis_p = visible.mutable_data(), *chunk_p = chunk.mutable_data(), *count_p = counts.mutable_data();
    uint8_t *contact_p = contact.mutable_data(), *python_p = python.mutable_data();
    double* sum_p = sums.mutable_data();
    const int64_t *row_off = row_offsets.data(), *row_p = rows.data();
    if (with_fluency && !fluency_) throw std::runtime_error("no fluency model: call set_fluency first");
    {
    py::gil_scoped_release release;
    // filters.quality.signals._chunks: consecutive texts of about chunk_chars characters
    std::vector<int64_t> local(n);
    int64_t size = 0, id = -1, first = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* p;
      size_t bytes;
      text(i, p, bytes);
      int64_t len = static_cast<int64_t>(utf8_length(p, bytes));
      if (i == 0 || (size && size + len > chunk_chars_)) {
        ++id, first = i, size = 0;
      }
      size += len + 1;
      chunk_p[i] = id;
      local[i] = i - first;
    }
    DocResult r;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* p;
      size_t bytes;
      text(i, p, bytes);
      decode_utf8(p, bytes, codes_);
      const uint32_t* c = codes_.data();
      const int64_t len = static_cast<int64_t>(codes_.size());
      ends_.clear();
      dict_.cut(c, len, ends_);
      signals_->compute(c, len, ends_, row_p + row_off[i], row_off[i + 1] - row_off[i],
                        static_cast<uint64_t>(local[i]), r);
      std::copy(r.sig, r.sig + N_SIG, sig_p + i * N_SIG);
      vis_p[i] = r.visible;
      contact_p[i] = contact_candidate(c, len, contact_kinds_.data(), min_id_digits_);
      sum_p[i] = 0.0;
      count_p[i] = 0;
      python_p[i] = 0;
      if (with_fluency) python_p[i] = !fluency_->score(c, len, sum_p[i], count_p[i]);
    }
    }
    return py::make_tuple(sig, visible, contact, chunk, sums, counts, python);
  }

  // fluency sums and counts of texts normalised by Python (fluency._nfkc_lower of t[:max] + "\n")
  py::tuple fluency_folded(Array<int64_t> offsets, py::buffer data) {
    Strings s(offsets, data);
    Array<double> sums(s.n);
    Array<int64_t> counts(s.n);
    double* sp = sums.mutable_data();
    int64_t* cp = counts.mutable_data();
    {
      py::gil_scoped_release release;
      for (int64_t i = 0; i < s.n; ++i) {
        decode_utf8(s.at(i), s.size(i), codes_);
        fluency_->score_folded(codes_.data(), static_cast<int64_t>(codes_.size()), sp[i], cp[i]);
      }
    }
    return py::make_tuple(sums, counts);
  }

 private:
  Dictionary dict_;
  Array<uint8_t> quality_table_, contact_kinds_;
  Hints hints_;
  std::unique_ptr<SignalPass> signals_;
  std::unique_ptr<FluencyScorer> fluency_;
  Array<uint8_t> simple_, length_;  // the numpy tables the fluency scorer reads in place
  Array<int64_t> offset_;
  Array<uint32_t> flat_, fold_;
  Array<int32_t> id_of_;
  int64_t chunk_chars_ = 1 << 20, min_id_digits_ = 5;
  std::vector<uint32_t> codes_;
  std::vector<int64_t> ends_;
  std::unique_ptr<Hmm> hmm_;
  Array<uint8_t> c_simple_, c_length_, c_class_;
  Array<int64_t> c_offset_;
  Array<uint32_t> c_flat_;
  int64_t c_max_chars_ = -1;
  std::vector<uint32_t> tmp_;
  std::vector<uint32_t> nodes_;
  std::string text_;
};

}  // namespace

PYBIND11_MODULE(_docpass, m) {
  m.doc() = "The compiled per-document pass of filters/docpass.py";
  m.attr("N_SIG") = static_cast<int>(N_SIG);
  py::class_<WordIds>(m, "WordIds").def(py::init<>()).def("__len__", &WordIds::size).def("clear", &WordIds::clear);
  py::class_<Engine>(m, "Engine")
      .def(py::init<const std::string&, Array<uint8_t>, Array<uint64_t>, Array<uint8_t>, const std::vector<std::string>&,
                    py::dict>())
      .def("set_fluency", &Engine::set_fluency)
      .def("fluency_bytes", &Engine::fluency_bytes)
      .def("dictionary_nodes", &Engine::dictionary_nodes)
      .def("markup", &Engine::markup)
      .def("cut", &Engine::cut)
      .def("presegment", &Engine::presegment)
      .def("set_hmm", &Engine::set_hmm)
      .def("set_classify", &Engine::set_classify)
      .def("cut_hmm", &Engine::cut_hmm)
      .def("classify_lines", &Engine::classify_lines)
      .def("template_keys", &Engine::template_keys)
      .def("encode", &Engine::encode)
      .def("quality", &Engine::quality)
      .def("fluency_folded", &Engine::fluency_folded);
}
