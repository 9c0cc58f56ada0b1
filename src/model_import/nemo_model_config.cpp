#include "model_import/nemo_model_config.h"

#include <fstream>
#include <sstream>

namespace voxrt::model_import {
namespace {

struct Line {
  int number = 0;  // 1-based, for errors
  int indent = 0;
  std::string text;  // without indentation and comment
};

// Cuts a comment (" #" outside quotes) and trailing spaces.
std::string strip_comment(const std::string& s) {
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
      return s.substr(0, i);
    }
  }
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// A quoted scalar's value ('' in single quotes is a quote; backslash escapes in double quotes).
std::string unquote(const std::string& s) {
  if (s.size() >= 2 && s.front() == '\'' && s.back() == '\'') {
    std::string out;
    for (std::size_t i = 1; i + 1 < s.size(); ++i) {
      out += s[i];
      if (s[i] == '\'' && i + 2 < s.size() && s[i + 1] == '\'') ++i;
    }
    return out;
  }
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
    std::string out;
    for (std::size_t i = 1; i + 1 < s.size(); ++i) {
      if (s[i] != '\\' || i + 2 >= s.size()) {
        out += s[i];
        continue;
      }
      const char e = s[++i];
      out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
    }
    return out;
  }
  return s;
}

// The position of the ':' that ends a map key (followed by a space or the end), outside quotes.
std::size_t key_colon(const std::string& s) {
  char quote = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if ((c == '\'' || c == '"') && i == 0) {
      quote = c;
    } else if (c == '[' || c == '{') {
      return std::string::npos;
    } else if (c == ':' && (i + 1 == s.size() || s[i + 1] == ' ')) {
      return i;
    }
  }
  return std::string::npos;
}

std::shared_ptr<YamlNode> scalar_node(const std::string& raw) {
  auto node = std::make_shared<YamlNode>();
  const std::string text = trim(raw);
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    node->kind = YamlNode::Kind::kList;
    // One-line flow list of scalars: split at commas outside quotes.
    std::string item;
    char quote = 0;
    auto flush = [&]() {
      const std::string t = trim(item);
      if (!t.empty()) node->list.push_back(scalar_node(t));
      item.clear();
    };
    for (std::size_t i = 1; i + 1 < text.size(); ++i) {
      const char c = text[i];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == ',') {
        flush();
        continue;
      }
      item += c;
    }
    flush();
    return node;
  }
  node->kind = YamlNode::Kind::kScalar;
  node->scalar = unquote(text);
  return node;
}

class Parser {
 public:
  Parser(std::vector<Line> lines, std::string where)
      : lines_(std::move(lines)), where_(std::move(where)) {}

  Expected<std::shared_ptr<YamlNode>> parse_document() {
    if (lines_.empty()) return std::make_shared<YamlNode>();
    VOXRT_ASSIGN_OR_RETURN(auto root, parse_block(lines_[0].indent));
    if (next_ < lines_.size()) {
      return invalid_argument(where_, ":", lines_[next_].number,
                              ": unexpected indentation (expected ", lines_[0].indent,
                              " spaces, found ", lines_[next_].indent, ")");
    }
    return root;
  }

 private:
  static bool is_item(const std::string& text) { return text == "-" || text.starts_with("- "); }

  Expected<std::shared_ptr<YamlNode>> parse_block(int indent) {
    if (is_item(lines_[next_].text)) return parse_list(indent);
    return parse_map(indent);
  }

  // Lists and maps nest by recursion: a limit keeps a hostile file from exhausting the stack
  // (OmegaConf's configs nest a handful of levels).
  static constexpr int kMaxNesting = 64;
  struct NestingGuard {
    int& depth;
    explicit NestingGuard(int& d) : depth(++d) {}
    ~NestingGuard() { --depth; }
  };
  Status check_nesting(const Line& line) const {
    if (depth_ <= kMaxNesting) return Status::ok();
    return invalid_argument(where_, ":", line.number, ": nested deeper than ", kMaxNesting,
                            " levels");
  }

  Expected<std::shared_ptr<YamlNode>> parse_list(int indent) {
    NestingGuard guard(depth_);
    VOXRT_RETURN_IF_ERROR(check_nesting(lines_[next_]));
    auto node = std::make_shared<YamlNode>();
    node->kind = YamlNode::Kind::kList;
    while (next_ < lines_.size() && lines_[next_].indent == indent && is_item(lines_[next_].text)) {
      Line& line = lines_[next_];
      const std::string rest = line.text.size() > 2 ? trim(line.text.substr(2)) : "";
      if (rest.empty()) {
        ++next_;
        if (next_ < lines_.size() && lines_[next_].indent > indent) {
          VOXRT_ASSIGN_OR_RETURN(auto child, parse_block(lines_[next_].indent));
          node->list.push_back(child);
        } else {
          node->list.push_back(std::make_shared<YamlNode>());
        }
      } else if (is_item(rest)) {
        // "- - item": a list whose first item sits after the dash (OmegaConf writes a list of
        // lists, such as a multi-lookahead model's att_context_size, so).
        line.indent = indent + 2;
        line.text = rest;
        VOXRT_ASSIGN_OR_RETURN(auto child, parse_list(indent + 2));
        node->list.push_back(child);
      } else if (key_colon(rest) != std::string::npos) {
        // "- key: value": a map whose first key sits after the dash.
        line.indent = indent + 2;
        line.text = rest;
        VOXRT_ASSIGN_OR_RETURN(auto child, parse_map(indent + 2));
        node->list.push_back(child);
      } else {
        node->list.push_back(scalar_node(rest));
        ++next_;
      }
    }
    return node;
  }

  Expected<std::shared_ptr<YamlNode>> parse_map(int indent) {
    NestingGuard guard(depth_);
    if (next_ < lines_.size()) VOXRT_RETURN_IF_ERROR(check_nesting(lines_[next_]));
    auto node = std::make_shared<YamlNode>();
    node->kind = YamlNode::Kind::kMap;
    while (next_ < lines_.size() && lines_[next_].indent == indent) {
      const Line& line = lines_[next_];
      const std::size_t colon = key_colon(line.text);
      if (colon == std::string::npos || is_item(line.text)) {
        return invalid_argument(where_, ":", line.number, ": expected 'key: value', found '",
                                line.text, "'");
      }
      const std::string key = unquote(trim(line.text.substr(0, colon)));
      const std::string value = trim(line.text.substr(colon + 1));
      ++next_;
      std::shared_ptr<YamlNode> child;
      if (!value.empty() && value != "|" && value != ">" && value != "|-" && value != ">-") {
        child = scalar_node(value);
      } else if (next_ < lines_.size() && lines_[next_].indent > indent) {
        if (!value.empty()) {
          // A multi-line scalar: kept as opaque text.
          child = std::make_shared<YamlNode>();
          child->kind = YamlNode::Kind::kScalar;
          while (next_ < lines_.size() && lines_[next_].indent > indent)
            child->scalar += lines_[next_++].text + "\n";
        } else {
          VOXRT_ASSIGN_OR_RETURN(child, parse_block(lines_[next_].indent));
        }
      } else if (next_ < lines_.size() && lines_[next_].indent == indent &&
                 is_item(lines_[next_].text)) {
        // OmegaConf writes a key's list items at the key's own indentation.
        VOXRT_ASSIGN_OR_RETURN(child, parse_list(indent));
      } else {
        child = std::make_shared<YamlNode>();
      }
      node->map.emplace_back(key, child);
    }
    return node;
  }

  std::vector<Line> lines_;
  std::string where_;
  std::size_t next_ = 0;
  int depth_ = 0;  // lists and maps open
};

}  // namespace

const YamlNode* YamlNode::get(const std::string& key) const {
  if (kind != Kind::kMap) return nullptr;
  for (const auto& [k, v] : map)
    if (k == key) return v.get();
  return nullptr;
}

const YamlNode* YamlNode::at(const std::string& dotted) const {
  const YamlNode* node = this;
  std::size_t begin = 0;
  while (node != nullptr) {
    const std::size_t dot = dotted.find('.', begin);
    node =
        node->get(dotted.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return node;
}

bool YamlNode::is_null() const {
  return kind == Kind::kNull ||
         (kind == Kind::kScalar && (scalar == "null" || scalar == "~" || scalar == "None"));
}

Expected<std::shared_ptr<YamlNode>> parse_yaml_subset(const std::string& text,
                                                      const std::string& where) {
  std::vector<Line> lines;
  std::istringstream in(text);
  int number = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    if (raw.find('\t') != std::string::npos && raw.find_first_not_of(" \t") != std::string::npos &&
        raw[raw.find_first_not_of(' ')] == '\t') {
      return invalid_argument(where, ":", number, ": a tab in the indentation");
    }
    const std::string body = strip_comment(raw);
    const std::string t = trim(body);
    if (t.empty() || t == "---" || t == "...") continue;
    lines.push_back(Line{number, static_cast<int>(body.find_first_not_of(' ')), t});
  }
  return Parser(std::move(lines), where).parse_document();
}

Expected<std::shared_ptr<YamlNode>> read_yaml_subset_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(path, ": cannot read");
  std::stringstream bytes;
  bytes << in.rdbuf();
  return parse_yaml_subset(bytes.str(), path);
}

}  // namespace voxrt::model_import
