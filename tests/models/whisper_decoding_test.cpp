// The encoder_decoder family's decoding options on their own (no model): the prompt with
// previous text and its reset rules (window_prompt.h), the counter-based sampling draws
// (token_sampling.h) and the temperature fallback's checks (fallback_policy.h). The same pieces
// run end to end against the Python reference in whisper_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "stream/encoder_decoder/fallback_policy.h"
#include "stream/encoder_decoder/stream_choices.h"
#include "stream/encoder_decoder/token_sampling.h"
#include "stream/encoder_decoder/window_prompt.h"

namespace voxrt::stream {
namespace {

EncoderDecoderContract multilingual_contract() {
  EncoderDecoderContract c;
  c.vocab_size = 300;
  c.max_target_positions = 12;  // 5 previous tokens at most
  c.sot_id = 269;
  c.task_id = 273;
  c.translate_id = 272;
  c.sot_prev_id = 275;
  c.no_timestamps_id = 277;
  c.eos_id = 268;
  c.languages = {{"en", 270}, {"de", 271}};
  return c;
}

TEST(WindowPrompt, PreviousTextThenTheTaskPrompt) {
  const EncoderDecoderContract c = multilingual_contract();
  EXPECT_EQ(c.max_previous_tokens(), 5);
  EXPECT_EQ(c.max_prompt_tokens(), 10);
  using Ids = std::vector<int>;
  EXPECT_EQ(window_prompt(c, 270, WhisperTask::kTranscribe, false, {}), (Ids{269, 270, 273, 277}));
  const Ids previous = {1, 2, 3, 4, 5, 6, 7};
  // Only the last max_previous_tokens() follow <|startofprev|>.
  const Ids prompt = window_prompt(c, 271, WhisperTask::kTranslate, true, previous);
  EXPECT_EQ(prompt, (Ids{275, 3, 4, 5, 6, 7, 269, 271, 272}));
  EXPECT_EQ(start_of_transcript_index(c, prompt), 6);
  // A model without <|startofprev|> is never conditioned.
  EncoderDecoderContract plain = c;
  plain.sot_prev_id = -1;
  EXPECT_EQ(plain.max_prompt_tokens(), 4);
  EXPECT_EQ(window_prompt(plain, 270, WhisperTask::kTranscribe, false, previous),
            (Ids{269, 270, 273, 277}));
}

TEST(PreviousText, KeepsTheLastTokensAndResetsAsOpenAI) {
  using Ids = std::vector<int>;
  auto ids = [](std::span<const int> s) { return Ids(s.begin(), s.end()); };
  PreviousText text({90, 91}, 4, true);
  EXPECT_EQ(ids(text.tokens()), (Ids{90, 91}));  // the initial prompt before the first window
  text.add_window(Ids{1, 2, 3}, 0.0);
  EXPECT_EQ(ids(text.tokens()), (Ids{91, 1, 2, 3}));
  text.add_window(Ids{4}, 0.4);  // up to 0.5 still conditions
  EXPECT_EQ(ids(text.tokens()), (Ids{1, 2, 3, 4}));
  text.add_window(Ids{5, 6}, 0.6);  // sampled hot: the next window starts afresh
  EXPECT_TRUE(text.tokens().empty());
  text.add_window(Ids{7}, 0.0);
  EXPECT_EQ(ids(text.tokens()), (Ids{7}));
  text.reset();
  EXPECT_EQ(ids(text.tokens()), (Ids{90, 91}));
  // Conditioning off: the initial prompt serves the first window only.
  PreviousText off({90}, 4, false);
  EXPECT_EQ(ids(off.tokens()), (Ids{90}));
  off.add_window(Ids{1, 2}, 0.0);
  EXPECT_TRUE(off.tokens().empty());
}

TEST(TokenSampling, SplitMix64AndDraws) {
  // SplitMix64's first output from state 0, as published with the algorithm.
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFull);
  const double inf = std::numeric_limits<double>::infinity();
  const float logits[3] = {0.0f, static_cast<float>(-inf), std::log(3.0f)};
  // Weights 1, -, 3 at temperature 1: u below 1/4 draws id 0, above it id 2; never id 1.
  EXPECT_EQ(sample_token(logits, 3, 1.0, 0.2), 0);
  EXPECT_EQ(sample_token(logits, 3, 1.0, 0.3), 2);
  EXPECT_EQ(sample_token(logits, 3, 1.0, 0.999999), 2);
  const float none[2] = {static_cast<float>(-inf), static_cast<float>(-inf)};
  EXPECT_EQ(sample_token(none, 2, 1.0, 0.5), -1);
  // Over many steps the draws follow the weights; a colder temperature sharpens them
  // (weights 1 : 9 at temperature 0.5).
  const std::uint64_t key = sampling_key(7, 0, 1);
  int twos = 0;
  int twos_cold = 0;
  const int draws = 4000;
  for (int step = 0; step < draws; ++step) {
    const double u = sampling_uniform(key, static_cast<std::uint64_t>(step));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    twos += sample_token(logits, 3, 1.0, u) == 2;
    twos_cold += sample_token(logits, 3, 0.5, u) == 2;
  }
  EXPECT_NEAR(static_cast<double>(twos) / draws, 0.75, 0.03);
  EXPECT_NEAR(static_cast<double>(twos_cold) / draws, 0.9, 0.03);
  // Every counter changes the draw.
  EXPECT_NE(sampling_uniform(sampling_key(7, 0, 1), 0), sampling_uniform(sampling_key(8, 0, 1), 0));
  EXPECT_NE(sampling_uniform(sampling_key(7, 0, 1), 0), sampling_uniform(sampling_key(7, 1, 1), 0));
  EXPECT_NE(sampling_uniform(sampling_key(7, 0, 1), 0), sampling_uniform(sampling_key(7, 0, 2), 0));
}

TEST(FallbackPolicy, OpenAIChecks) {
  // Python: len(s) / len(zlib.compress(s)) = 47 / 15 and 23 / 31.
  EXPECT_DOUBLE_EQ(compression_ratio("the the the the the the the the the the the the"),
                   47.0 / 15.0);
  EXPECT_DOUBLE_EQ(compression_ratio("hello world, the speech"), 23.0 / 31.0);
  EXPECT_EQ(compression_ratio(""), 0.0);
  TemperatureFallbackConfig config;
  config.temperatures = TemperatureFallbackConfig::openai_temperatures();
  const FallbackPolicy policy(config, -1.0, 0.6, true);
  EXPECT_EQ(policy.attempts(), 6);
  EXPECT_DOUBLE_EQ(policy.temperature(3), 0.6);
  WindowOutcome sure;
  sure.mean_log_probability = -0.5;
  WindowOutcome unsure = sure;
  unsure.mean_log_probability = -1.5;
  WindowOutcome silence = unsure;
  silence.no_speech_probability = 0.7;
  const std::string plain = "hello world, the speech";
  const std::string repetitive = "the the the the the the the the the the the the";
  EXPECT_FALSE(policy.retry(0, sure, plain));
  EXPECT_TRUE(policy.retry(0, sure, repetitive));  // too repetitive
  EXPECT_TRUE(policy.retry(0, unsure, plain));     // too unsure
  EXPECT_FALSE(policy.retry(0, silence, plain));   // silence: skipped, not retried
  EXPECT_FALSE(policy.retry(5, unsure, plain));    // no temperature left
  // Without a no-speech token there is no silence exception.
  EXPECT_TRUE(FallbackPolicy(config, -1.0, 0.6, false).retry(0, silence, plain));
  // Options validate: temperatures ascend.
  EncoderDecoderOptions options;
  options.fallback.temperatures = {0.0, 0.4, 0.2};
  EXPECT_FALSE(options.validate().is_ok());
  options.fallback.temperatures = {};
  EXPECT_FALSE(options.validate().is_ok());
  options.fallback.temperatures = {0.0, 0.5};
  EXPECT_TRUE(options.validate().is_ok());
}

// A stream's own choices (the server's prompt, temperature, temperature_fallback) over the
// recognizer's options: the fallback from 0 is OpenAI's list to the bit, from 0.2 its tail; a
// temperature alone keeps the recognizer's fallback switch; out-of-range values are refused with
// the range and the value.
TEST(WhisperStreamChoices, TemperaturesOverTheRecognizers) {
  EXPECT_EQ(fallback_temperatures_from(0.0), TemperatureFallbackConfig::openai_temperatures());
  EXPECT_EQ(fallback_temperatures_from(0.2), (std::vector<double>{0.2, 0.4, 0.6, 0.8, 1.0}));
  EXPECT_EQ(fallback_temperatures_from(0.9), (std::vector<double>{0.9}));
  EXPECT_EQ(fallback_temperatures_from(1.0), (std::vector<double>{1.0}));

  EncoderDecoderOptions no_fallback;  // {0}
  EncoderDecoderOptions openai;
  openai.fallback.temperatures = TemperatureFallbackConfig::openai_temperatures();
  openai.initial_prompt = "server prompt";
  WhisperStreamChoices none;
  EXPECT_EQ(none.over(openai).fallback.temperatures, openai.fallback.temperatures);
  EXPECT_EQ(none.over(openai).initial_prompt, "server prompt");
  WhisperStreamChoices warm;
  warm.temperature = 0.4;
  EXPECT_EQ(warm.over(no_fallback).fallback.temperatures, (std::vector<double>{0.4}));
  EXPECT_EQ(warm.over(openai).fallback.temperatures, (std::vector<double>{0.4, 0.6, 0.8, 1.0}));
  WhisperStreamChoices off;
  off.temperature_fallback = false;
  EXPECT_EQ(off.over(openai).fallback.temperatures, (std::vector<double>{0.0}));
  WhisperStreamChoices on;
  on.temperature_fallback = true;
  on.initial_prompt = "stream prompt";
  EXPECT_EQ(on.over(no_fallback).fallback.temperatures,
            TemperatureFallbackConfig::openai_temperatures());
  EXPECT_EQ(on.over(openai).initial_prompt, "stream prompt");

  WhisperStreamChoices bad;
  bad.temperature = 1.5;
  EXPECT_EQ(bad.validate().message(), "temperature must be a number from 0 to 1, found 1.5");
  bad.temperature = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(bad.validate().is_ok());
  bad.temperature = 0.0;
  EXPECT_TRUE(bad.validate().is_ok());
  bad.initial_prompt = std::string(WhisperStreamChoices::kMaxInitialPromptBytes + 1, 'a');
  EXPECT_EQ(bad.validate().message(), "prompt is 4097 bytes, at most 4096 are allowed");
}

}  // namespace
}  // namespace voxrt::stream
