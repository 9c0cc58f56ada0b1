// GPT-2's byte-level BPE encoding (decode/byte_level_bpe_encoder.h) on a hand-made vocabulary:
// the pre-tokenizer cuts as GPT-2's pattern (the pieces below are what tests/models/
// optimum_whisper.py's gpt2_split, on Python's Unicode classes, gives), merges apply lowest rank
// first, bytes outside ASCII go through GPT-2's stand-ins, and errors name the file, the line or
// the missing symbol.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "decode/byte_level_bpe_encoder.h"

namespace voxrt::decode {
namespace {
namespace fs = std::filesystem;

fs::path write_tokenizer(const std::string& vocab_json, const std::string& merges_txt) {
  const fs::path dir =
      fs::temp_directory_path() / ("voxrt_bpe_encoder_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "vocab.json") << vocab_json;
  std::ofstream(dir / "merges.txt") << merges_txt;
  return dir;
}

TEST(ByteLevelBpeEncoder, SplitsAsGpt2Pattern) {
  using Pieces = std::vector<std::string>;
  EXPECT_EQ(ByteLevelBpeEncoder::split("Hello world's  test\tx\n  "),
            (Pieces{"Hello", " world", "'s", " ", " test", "\t", "x", "\n  "}));
  EXPECT_EQ(ByteLevelBpeEncoder::split(" 30 sec's, ok?! we'll"),
            (Pieces{" 30", " sec", "'s", ",", " ok", "?!", " we", "'ll"}));
  // Non-ASCII letters stay in their word.
  EXPECT_EQ(ByteLevelBpeEncoder::split(" wörld café"), (Pieces{" wörld", " café"}));
}

TEST(ByteLevelBpeEncoder, MergesLowestRankFirstAndMapsBytes) {
  // Ġ is the space's stand-in; Ã and ¶ are the stand-ins of ö's UTF-8 bytes C3 B6.
  const fs::path dir = write_tokenizer(
      R"({"h": 0, "e": 1, "l": 2, "o": 3, "Ġ": 4, "Ġh": 5, "ll": 6, "Ġhe": 7, "llo": 8,
          "Ã": 9, "¶": 10, "Ã¶": 11, "Ġhello": 12, "x": 13})",
      "#version: 0.2\nl l\nĠ h\nĠh e\nll o\nÃ ¶\nĠhe llo\n");
  auto encoder =
      ByteLevelBpeEncoder::from_files((dir / "vocab.json").string(), (dir / "merges.txt").string());
  ASSERT_TRUE(encoder.has_value()) << encoder.status().to_string();
  auto ids = encoder->encode(" hello ö");
  ASSERT_TRUE(ids.has_value()) << ids.status().to_string();
  EXPECT_EQ(*ids, (std::vector<int>{12, 4, 11}));
  // "hel" merges nothing past its pairs' ranks: h e l.
  ids = encoder->encode("hel");
  ASSERT_TRUE(ids.has_value());
  EXPECT_EQ(*ids, (std::vector<int>{0, 1, 2}));
  // A symbol the vocabulary lacks is named.
  ids = encoder->encode("hz");
  ASSERT_FALSE(ids.has_value());
  EXPECT_NE(ids.status().message().find("'z'"), std::string::npos) << ids.status().to_string();
  fs::remove_all(dir);
}

TEST(ByteLevelBpeEncoder, ErrorsNameTheFileAndLine) {
  const fs::path dir = write_tokenizer(R"({"a": 0})", "#version: 0.2\na b\nbroken\n");
  auto encoder =
      ByteLevelBpeEncoder::from_files((dir / "vocab.json").string(), (dir / "merges.txt").string());
  ASSERT_FALSE(encoder.has_value());
  EXPECT_NE(encoder.status().message().find("merges.txt:3"), std::string::npos)
      << encoder.status().to_string();
  EXPECT_NE(encoder.status().message().find("'broken'"), std::string::npos);
  encoder = ByteLevelBpeEncoder::from_files((dir / "missing.json").string(),
                                            (dir / "merges.txt").string());
  ASSERT_FALSE(encoder.has_value());
  EXPECT_NE(encoder.status().message().find("missing.json"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace voxrt::decode
