// libFuzzer target: arbitrary bytes into the engine loader. It must refuse (never crash on)
// every malformed file. The checksum would stop most mutations at the header, so half of the
// inputs get a valid checksum and file size patched in, to reach the section parsers.
#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/byte_stream.h"
#include "runtime/engine_format.h"
#include "voxrt/engine.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size >= voxrt::runtime::kEngineHeaderBytes && (size & 1)) {
    std::memcpy(&bytes[0], voxrt::runtime::kEngineMagic, 8);
    const std::uint32_t version = voxrt::runtime::kEngineFormatVersion;
    const std::uint32_t header = voxrt::runtime::kEngineHeaderBytes;
    const std::uint64_t file_bytes = size;
    std::memcpy(&bytes[8], &version, 4);
    std::memcpy(&bytes[12], &header, 4);
    std::memcpy(&bytes[16], &file_bytes, 8);
    const std::uint64_t checksum = voxrt::runtime::fnv1a64(bytes.data() + header, size - header);
    std::memcpy(&bytes[24], &checksum, 8);
  }
  auto engine = voxrt::Engine::load_bytes(std::move(bytes));
  (void)engine;
  return 0;
}
