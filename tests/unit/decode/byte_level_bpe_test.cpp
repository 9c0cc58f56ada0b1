// GPT-2 byte-level BPE decoding (decode/byte_level_bpe.h): vocab.json with added_tokens.json or
// tokenizer.json, special tokens skipped, multi-byte characters split across tokens, malformed
// UTF-8 replaced, and errors that name the file and the entry.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "decode/byte_level_bpe.h"

namespace voxrt::decode {
namespace {
namespace fs = std::filesystem;

fs::path scratch() {
  const fs::path dir = fs::temp_directory_path() / "voxrt_byte_level_bpe_test";
  fs::create_directories(dir);
  return dir;
}

std::string write(const std::string& name, const std::string& text) {
  const fs::path path = scratch() / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// "Ġ" is GPT-2's stand-in for the space byte (U+0120); "Ã" "©" are the stand-ins of the two
// bytes of "é" (0xC3 0xA9); "Ċ" is "\n" (U+010A).
const char* kVocab =
    R"({"a": 0, "b": 1, "Ġhello": 2, "Ġworld": 3, "Ã": 4, "©": 5, "Ċ": 6, "<|endoftext|>": 7})";

TEST(ByteLevelBpe, DecodesBytesAndSkipsSpecialTokens) {
  const std::string vocab = write("vocab.json", kVocab);
  const std::string added =
      write("added_tokens.json", R"({"<|startoftranscript|>": 8, "<|en|>": 9})");
  auto decoder = ByteLevelBpeDecoder::from_files(vocab, added);
  ASSERT_TRUE(decoder.has_value()) << decoder.status().to_string();
  EXPECT_EQ(decoder->size(), 10);
  EXPECT_TRUE(decoder->is_special(7));
  EXPECT_TRUE(decoder->is_special(8));
  EXPECT_FALSE(decoder->is_special(2));
  EXPECT_EQ(decoder->id_of("<|en|>"), 9);
  const std::vector<int> ids = {8, 9, 2, 3, 6, 4, 5, 0, 7};
  auto text = decoder->decode(ids);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text,
            " hello world\n\xC3\xA9"
            "a");
}

TEST(ByteLevelBpe, ReadsTokenizerJsonAddedTokens) {
  const std::string vocab = write("vocab2.json", kVocab);
  const std::string tokenizer =
      write("tokenizer.json",
            R"({"added_tokens": [{"id": 7, "content": "<|endoftext|>", "special": true},
                           {"id": 12, "content": "<|notimestamps|>", "special": true}]})");
  auto decoder = ByteLevelBpeDecoder::from_files(vocab, tokenizer);
  ASSERT_TRUE(decoder.has_value()) << decoder.status().to_string();
  EXPECT_EQ(decoder->size(), 13);
  EXPECT_TRUE(decoder->is_special(12));
  auto text = decoder->decode(std::vector<int>{12, 0, 10, 1});  // 10: a gap, decodes to nothing
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "ab");
  EXPECT_FALSE(decoder->decode(std::vector<int>{13}).has_value());
}

TEST(ByteLevelBpe, MalformedUtf8BecomesReplacementCharacters) {
  const std::string vocab = write("vocab3.json", kVocab);
  auto decoder = ByteLevelBpeDecoder::from_files(vocab, "");
  ASSERT_TRUE(decoder.has_value());
  // 0xC3 alone (its continuation never comes), then "a".
  auto text = decoder->decode(std::vector<int>{4, 0});
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text,
            "\xEF\xBF\xBD"
            "a");
  // A stray continuation byte is one; E2 82 (a 3-byte sequence cut short) is one more, as
  // Python's b"\xA9\xE2\x82".decode(errors="replace") gives; F0 80 is two (80 cannot follow F0).
  EXPECT_EQ(utf8_with_replacements("\xA9\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8_with_replacements("\xF0\x80z"), "\xEF\xBF\xBD\xEF\xBF\xBDz");
  EXPECT_EQ(utf8_with_replacements("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(gpt2_byte_to_code_point(' '), 0x120);
  EXPECT_EQ(gpt2_byte_to_code_point('a'), 'a');
}

TEST(ByteLevelBpe, ErrorsNameTheFileAndTheEntry) {
  auto missing = ByteLevelBpeDecoder::from_files((scratch() / "absent.json").string(), "");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.status().message().find("absent.json"), std::string::npos);

  const std::string bad_id = write("bad_id.json", R"({"a": "zero"})");
  auto wrong = ByteLevelBpeDecoder::from_files(bad_id, "");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.status().message().find("bad_id.json"), std::string::npos);
  EXPECT_NE(wrong.status().message().find("'a'"), std::string::npos);

  // A space is not a GPT-2 stand-in (it is spelled "Ġ").
  const std::string not_bytes = write("not_bytes.json", R"({"a b": 0})");
  auto spelled = ByteLevelBpeDecoder::from_files(not_bytes, "");
  ASSERT_FALSE(spelled.has_value());
  EXPECT_NE(spelled.status().message().find("byte-level alphabet"), std::string::npos);

  const std::string vocab = write("vocab4.json", kVocab);
  const std::string clash = write("clash.json", R"({"<|en|>": 1})");
  auto both = ByteLevelBpeDecoder::from_files(vocab, clash);
  ASSERT_FALSE(both.has_value());
  EXPECT_NE(both.status().message().find("clash.json"), std::string::npos);
}

}  // namespace
}  // namespace voxrt::decode
