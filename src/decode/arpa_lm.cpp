#include "decode/arpa_lm.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace voxrt::decode {
namespace {

constexpr float kLn10 = 2.302585093f;

std::string make_key(const int* ids, std::size_t count) {
  return std::string(reinterpret_cast<const char*>(ids), count * sizeof(int));
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

bool parse_float(std::string_view text, float& value) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(value);
}

}  // namespace

Expected<ArpaLm> ArpaLm::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path, ": cannot open the ARPA language model");
  std::ostringstream content;
  content << in.rdbuf();
  return parse(content.str(), path);
}

Expected<ArpaLm> ArpaLm::parse(std::string_view text, std::string_view source_name) {
  ArpaLm lm;
  std::vector<long long> declared;  // declared[n-1]: count of n-grams
  std::vector<long long> found;
  int section = -1;  // -1: before \data\, 0: in \data\, n: in \n-grams:
  bool ended = false;
  std::size_t line_number = 0;
  std::size_t position = 0;
  std::vector<int> ids;
  auto fail = [&](const auto&... parts) {
    return corrupt(source_name, ":", line_number, ": ", parts...);
  };
  while (position < text.size() && !ended) {
    std::size_t end = text.find('\n', position);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(position, end - position);
    position = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::vector<std::string_view> fields = split_fields(line);
    if (fields.empty()) continue;
    if (fields[0] == "\\data\\") {
      section = 0;
      continue;
    }
    if (fields[0] == "\\end\\") {
      ended = true;
      break;
    }
    if (fields[0].size() > 1 && fields[0][0] == '\\') {
      // \N-grams:
      int n = 0;
      auto [ptr, ec] =
          std::from_chars(fields[0].data() + 1, fields[0].data() + fields[0].size(), n);
      if (ec != std::errc() || std::string_view(ptr).substr(0, 7) != "-grams:" || n < 1 ||
          n > static_cast<int>(declared.size())) {
        return fail("expected a section header \\N-grams: with N declared in \\data\\, found '",
                    line, "'");
      }
      if (n != section + 1 && !(section == 0 && n == 1)) {
        return fail("expected \\", section + 1, "-grams:, found '", line, "'");
      }
      section = n;
      continue;
    }
    if (section == -1) continue;  // text before \data\ is a comment
    if (section == 0) {
      // ngram N=COUNT
      if (fields[0] != "ngram" || fields.size() != 2) {
        return fail("expected 'ngram N=COUNT' in \\data\\, found '", line, "'");
      }
      const std::size_t equals = fields[1].find('=');
      int n = 0;
      long long count = -1;
      if (equals == std::string_view::npos ||
          std::from_chars(fields[1].data(), fields[1].data() + equals, n).ec != std::errc() ||
          std::from_chars(fields[1].data() + equals + 1, fields[1].data() + fields[1].size(), count)
                  .ec != std::errc() ||
          n != static_cast<int>(declared.size()) + 1 || count < 0) {
        return fail("expected 'ngram ", declared.size() + 1, "=COUNT', found '", line, "'");
      }
      declared.push_back(count);
      found.push_back(0);
      continue;
    }
    const int n = section;
    if (static_cast<int>(fields.size()) != n + 1 && static_cast<int>(fields.size()) != n + 2) {
      return fail("expected log10-prob, ", n, " words and an optional backoff, found ",
                  fields.size(), " fields");
    }
    float log10_prob = 0.0f;
    float log10_backoff = 0.0f;
    if (!parse_float(fields[0], log10_prob)) {
      return fail("expected a log10 probability, found '", fields[0], "'");
    }
    if (static_cast<int>(fields.size()) == n + 2 &&
        !parse_float(fields[static_cast<std::size_t>(n) + 1], log10_backoff)) {
      return fail("expected a log10 backoff weight, found '",
                  fields[static_cast<std::size_t>(n) + 1], "'");
    }
    ids.clear();
    for (int i = 1; i <= n; ++i) {
      const std::string word(fields[static_cast<std::size_t>(i)]);
      auto it = lm.word_ids_.find(word);
      if (it == lm.word_ids_.end()) {
        if (n > 1) {
          return fail("the ", n, "-gram uses '", word, "', which has no unigram");
        }
        it = lm.word_ids_.emplace(word, static_cast<int>(lm.word_ids_.size())).first;
      }
      ids.push_back(it->second);
    }
    Entry entry{log10_prob * kLn10, log10_backoff * kLn10};
    if (!lm.ngrams_.emplace(make_key(ids.data(), ids.size()), entry).second) {
      return fail("duplicate ", n, "-gram '", line, "'");
    }
    ++found[static_cast<std::size_t>(n) - 1];
  }
  if (declared.empty()) return corrupt(source_name, ": expected a \\data\\ section, found none");
  if (!ended) return corrupt(source_name, ": expected \\end\\, found the end of the file");
  for (std::size_t n = 0; n < declared.size(); ++n) {
    if (declared[n] != found[n]) {
      return corrupt(source_name, ": \\data\\ declares ", declared[n], " ", n + 1, "-grams, found ",
                     found[n]);
    }
  }
  lm.order_ = static_cast<int>(declared.size());
  lm.sentence_start_id_ = lm.word_id("<s>");
  lm.sentence_end_id_ = lm.word_id("</s>");
  lm.unknown_id_ = lm.word_id("<unk>");
  if (lm.sentence_end_id_ < 0) {
    return corrupt(source_name, ": expected the unigram </s>, found none");
  }
  return lm;
}

std::vector<std::string> ArpaLm::words() const {
  std::vector<std::string> out;
  out.reserve(word_ids_.size());
  for (const auto& [word, id] : word_ids_) out.push_back(word);
  return out;
}

int ArpaLm::word_id(std::string_view word) const {
  auto it = word_ids_.find(std::string(word));
  return it == word_ids_.end() ? -1 : it->second;
}

const ArpaLm::Entry* ArpaLm::find(const int* ids, std::size_t count) const {
  auto it = ngrams_.find(make_key(ids, count));
  return it == ngrams_.end() ? nullptr : &it->second;
}

ArpaLm::State ArpaLm::sentence_start() const {
  if (sentence_start_id_ < 0 || order_ < 2) return {};
  return {sentence_start_id_};
}

float ArpaLm::score_id(const State& state, int word, State& next) const {
  // P(w | h) = P(h w) if listed, else backoff(h) * P(w | h without its oldest word).
  std::vector<int> ngram(state.begin(), state.end());
  ngram.push_back(word);
  float backoff_sum = 0.0f;
  float log_prob = unknown_word_log_prob_;
  for (std::size_t context = state.size();; --context) {
    const int* start = ngram.data() + (state.size() - context);
    if (const Entry* entry = find(start, context + 1)) {
      log_prob = backoff_sum + entry->log_prob;
      break;
    }
    if (context == 0) break;
    if (const Entry* history = find(start, context)) backoff_sum += history->backoff;
  }
  // Next state: the last order-1 words, trimmed until it is a listed n-gram (a history that is
  // not listed has no extensions and no backoff weight, so it behaves like its suffix).
  std::size_t keep = std::min<std::size_t>(ngram.size(), order_ > 1 ? order_ - 1 : 0);
  while (keep > 0 && find(ngram.data() + ngram.size() - keep, keep) == nullptr) --keep;
  next.assign(ngram.end() - static_cast<std::ptrdiff_t>(keep), ngram.end());
  return log_prob;
}

float ArpaLm::score(const State& state, std::string_view word, State& next) const {
  int id = word_id(word);
  if (id < 0 || id == sentence_start_id_) id = unknown_id_;
  if (id < 0) {
    // Not even <unk>: the penalty, and the history restarts.
    next.clear();
    return unknown_word_log_prob_;
  }
  return score_id(state, id, next);
}

float ArpaLm::sentence_end_score(const State& state) const {
  State unused;
  return score_id(state, sentence_end_id_, unused);
}

}  // namespace voxrt::decode
