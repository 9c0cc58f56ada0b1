#include <gtest/gtest.h>

#include "audio/feature_config.h"

namespace voxrt::audio {
namespace {

TEST(FeatureConfig, DefaultsAreKaldiFbank) {
  const FeatureConfig config;
  ASSERT_TRUE(config.validate()) << config.validate().to_string();
  EXPECT_EQ(config.frame_length_samples(), 400);
  EXPECT_EQ(config.frame_shift_samples(), 160);
  EXPECT_EQ(config.fft_size(), 512);
  EXPECT_EQ(config.output_dim(), 80);
  EXPECT_NE(config.to_string().find("window=povey"), std::string::npos);
}

TEST(FeatureConfig, FromMetadataReadsEveryKey) {
  std::map<std::string, std::string> metadata = {{"voxrt.feature.type", "fbank"},
                                                 {"voxrt.feature.num_bins", "3"},
                                                 {"voxrt.feature.sample_rate_hz", "8000"},
                                                 {"voxrt.feature.frame_length_ms", "25"},
                                                 {"voxrt.feature.frame_shift_ms", "10"},
                                                 {"voxrt.feature.dither", "0"},
                                                 {"voxrt.feature.preemphasis", "0.9"},
                                                 {"voxrt.feature.window", "hamming"},
                                                 {"voxrt.feature.remove_dc_offset", "0"},
                                                 {"voxrt.feature.snip_edges", "0"},
                                                 {"voxrt.feature.low_freq_hz", "40"},
                                                 {"voxrt.feature.high_freq_hz", "-200"},
                                                 {"voxrt.feature.mean", "1,2,3"},
                                                 {"voxrt.feature.inv_std", "0.5, 0.25,2"},
                                                 {"voxrt.chunk_frames", "32"}};
  auto config = FeatureConfig::from_metadata(metadata);
  ASSERT_TRUE(config) << config.status().to_string();
  EXPECT_EQ(config->num_bins, 3);
  EXPECT_EQ(config->sample_rate_hz, 8000);
  EXPECT_EQ(config->window, WindowType::kHamming);
  EXPECT_FALSE(config->remove_dc_offset);
  EXPECT_FALSE(config->snip_edges);
  EXPECT_DOUBLE_EQ(config->preemphasis, 0.9);
  EXPECT_DOUBLE_EQ(config->high_freq_hz, -200);
  EXPECT_EQ(config->mean, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(config->inv_std, (std::vector<float>{0.5f, 0.25f, 2}));
}

TEST(FeatureConfig, SpectrogramFromMetadata) {
  auto config = FeatureConfig::from_metadata({{"voxrt.feature.type", "linear_spectrogram"}});
  ASSERT_TRUE(config) << config.status().to_string();
  EXPECT_EQ(config->num_bins, 161);
  EXPECT_EQ(config->fft_size(), 320);
  EXPECT_TRUE(config->periodic_window);
}

TEST(FeatureConfig, BadValuesAreErrorsThatSayWhat) {
  auto expect_error = [](std::map<std::string, std::string> metadata, const std::string& says) {
    auto config = FeatureConfig::from_metadata(metadata);
    ASSERT_FALSE(config);
    EXPECT_NE(config.status().message().find(says), std::string::npos) << config.status().message();
  };
  expect_error({{"voxrt.feature.type", "mfcc"}}, "found 'mfcc'");
  expect_error({{"voxrt.feature.num_bins", "eighty"}}, "expected a number");
  expect_error({{"voxrt.feature.num_bins", "2.5"}}, "expected an integer");
  expect_error({{"voxrt.feature.window", "kaiser"}}, "kaiser");
  expect_error({{"voxrt.feature.snip_edges", "yes"}}, "0/1/true/false");
  expect_error({{"voxrt.feature.mean", "1,2"}}, "expected 80 mean values, found 2");
  expect_error({{"voxrt.feature.high_freq_hz", "9000"}}, "expected high frequency");
  expect_error({{"voxrt.feature.low_freq_hz", "-5"}}, "low_freq_hz");
  expect_error({{"voxrt.feature.frame_shift_ms", "0"}}, "frame_shift_ms");
  expect_error({{"voxrt.feature.type", "linear_spectrogram"}, {"voxrt.feature.num_bins", "80"}},
               "expected num_bins = fft_size / 2 + 1 = 161");
}

}  // namespace
}  // namespace voxrt::audio
