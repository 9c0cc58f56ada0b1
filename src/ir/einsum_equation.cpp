#include "ir/einsum_equation.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace voxrt::ir {
namespace {

struct Term {
  std::string letters_before;  // letters before the ellipsis (all letters when there is none)
  std::string letters_after;
  bool ellipsis = false;
};

std::string strip_spaces(const std::string& text) {
  std::string out;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

Expected<Term> parse_term(const std::string& where, const std::string& text) {
  Term term;
  const std::size_t dots = text.find("...");
  if (dots != std::string::npos) {
    term.ellipsis = true;
    term.letters_before = text.substr(0, dots);
    term.letters_after = text.substr(dots + 3);
  } else {
    term.letters_before = text;
  }
  for (const std::string* part : {&term.letters_before, &term.letters_after}) {
    for (char c : *part) {
      if (!std::isalpha(static_cast<unsigned char>(c))) {
        return invalid_argument(where, ": einsum term '", text, "' has '", std::string(1, c),
                                "'; expected letters and at most one '...'");
      }
    }
  }
  return term;
}

}  // namespace

Expected<EinsumPlan> plan_einsum(const std::string& where, const std::string& equation,
                                 const std::vector<std::size_t>& input_ranks) {
  const std::string eq = strip_spaces(equation);
  const std::size_t arrow = eq.find("->");
  const std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  std::vector<Term> terms;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = lhs.find(',', begin);
    VOXRT_ASSIGN_OR_RETURN(Term term, parse_term(where, lhs.substr(begin, comma - begin)));
    terms.push_back(std::move(term));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (terms.size() != input_ranks.size()) {
    return invalid_argument(where, ": equation '", equation, "' has ", terms.size(),
                            " operands, the node has ", input_ranks.size(), " inputs");
  }
  std::size_t ellipsis_rank = 0;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const std::size_t letters = terms[i].letters_before.size() + terms[i].letters_after.size();
    if (letters > input_ranks[i] || (!terms[i].ellipsis && letters != input_ranks[i])) {
      return invalid_argument(where, ": equation '", equation, "' gives operand ", i, " ", letters,
                              " letters", terms[i].ellipsis ? " and '...'" : "",
                              " but it has rank ", input_ranks[i]);
    }
    if (terms[i].ellipsis) ellipsis_rank = std::max(ellipsis_rank, input_ranks[i] - letters);
  }
  EinsumPlan plan;
  // Labels 0 .. ellipsis_rank-1 are the ellipsis dims; letters follow in order of appearance.
  plan.label_count = static_cast<int>(ellipsis_rank);
  plan.broadcastable.assign(ellipsis_rank, true);
  std::map<char, int> letter_label;
  std::map<char, int> uses;
  auto label_of = [&](char c) {
    auto [it, added] = letter_label.emplace(c, plan.label_count);
    if (added) {
      ++plan.label_count;
      plan.broadcastable.push_back(false);
    }
    ++uses[c];
    return it->second;
  };
  for (std::size_t i = 0; i < terms.size(); ++i) {
    std::vector<int> labels;
    for (char c : terms[i].letters_before) labels.push_back(label_of(c));
    if (terms[i].ellipsis) {
      const std::size_t own =
          input_ranks[i] - terms[i].letters_before.size() - terms[i].letters_after.size();
      for (std::size_t d = ellipsis_rank - own; d < ellipsis_rank; ++d)
        labels.push_back(static_cast<int>(d));
    }
    for (char c : terms[i].letters_after) labels.push_back(label_of(c));
    plan.operands.push_back(std::move(labels));
  }
  if (arrow == std::string::npos) {
    for (std::size_t d = 0; d < ellipsis_rank; ++d) plan.output.push_back(static_cast<int>(d));
    for (const auto& [c, label] : letter_label)  // std::map: alphabetical
      if (uses[c] == 1) plan.output.push_back(label);
    return plan;
  }
  VOXRT_ASSIGN_OR_RETURN(const Term out, parse_term(where, eq.substr(arrow + 2)));
  auto output_label = [&](char c) -> Expected<int> {
    const auto it = letter_label.find(c);
    if (it == letter_label.end()) {
      return invalid_argument(where, ": output letter '", std::string(1, c), "' of equation '",
                              equation, "' is in no operand");
    }
    if (std::count(plan.output.begin(), plan.output.end(), it->second) != 0) {
      return invalid_argument(where, ": output letter '", std::string(1, c), "' repeats");
    }
    return it->second;
  };
  for (char c : out.letters_before) {
    VOXRT_ASSIGN_OR_RETURN(const int label, output_label(c));
    plan.output.push_back(label);
  }
  if (out.ellipsis) {
    for (std::size_t d = 0; d < ellipsis_rank; ++d) plan.output.push_back(static_cast<int>(d));
  } else if (ellipsis_rank > 0) {
    return invalid_argument(where, ": equation '", equation,
                            "' has '...' in an operand but not in the output");
  }
  for (char c : out.letters_after) {
    VOXRT_ASSIGN_OR_RETURN(const int label, output_label(c));
    plan.output.push_back(label);
  }
  return plan;
}

Expected<std::vector<std::int64_t>> einsum_label_sizes(const std::string& where,
                                                       const EinsumPlan& plan,
                                                       const std::vector<Dims>& input_dims) {
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(plan.label_count), -1);
  for (std::size_t i = 0; i < plan.operands.size(); ++i) {
    for (std::size_t axis = 0; axis < plan.operands[i].size(); ++axis) {
      const auto label = static_cast<std::size_t>(plan.operands[i][axis]);
      const std::int64_t d = input_dims[i][axis];
      if (d < 0) continue;
      std::int64_t& size = sizes[label];
      if (size < 0 || (plan.broadcastable[label] && size == 1)) {
        size = d;
      } else if (d != size && !(plan.broadcastable[label] && d == 1)) {
        return invalid_argument(where, ": einsum operand ", i, " axis ", axis, " has size ", d,
                                ", another operand gives that label size ", size);
      }
    }
  }
  return sizes;
}

}  // namespace voxrt::ir
