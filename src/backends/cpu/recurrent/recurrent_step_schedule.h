// How the threads of one direction share a recurrence (packed tactic). A layer is a sequence of
// phases (one per time step, two for GRU without linear_before_reset); each phase computes every
// unit block once, and phase p + 1 may start only when all blocks of phase p are done.
//
// Each thread owns a contiguous range of blocks (so its slice of R stays in its own L2) and
// claims them one at a time; a thread whose range is exhausted steals unclaimed blocks from the
// other ranges. A phase therefore waits only for blocks somebody is computing, never for a
// thread to be scheduled: when the cores are shared and one of our threads is preempted, the
// other carries on alone instead of stalling every step (a plain barrier collapses there).
// Waiting spins for a few tens of microseconds (a step takes about that long), then sleeps on
// a futex so that a preempted peer can have the core.
//
// Ranges are walked forwards on even steps and backwards on odd ones: when R is larger than the
// cache, the blocks touched last in one step are still cached at the start of the next.
#pragma once

#include <immintrin.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace voxrt::backends::cpu::recurrent {

class StepSchedule {
 public:
  // blocks split into `ranges` contiguous owner ranges (ranges <= blocks).
  StepSchedule(std::int64_t blocks, int ranges)
      : blocks_(blocks), ranges_(static_cast<std::size_t>(ranges)) {
    for (int i = 0; i < ranges; ++i) {
      ranges_[static_cast<std::size_t>(i)].begin = blocks * i / ranges;
      ranges_[static_cast<std::size_t>(i)].end = blocks * (i + 1) / ranges;
    }
  }

  std::int64_t range_begin(int owner) const {
    return ranges_[static_cast<std::size_t>(owner)].begin;
  }
  std::int64_t range_end(int owner) const { return ranges_[static_cast<std::size_t>(owner)].end; }

  // The next block of phase `phase` for thread `owner` (its own range first, then the others),
  // or nothing when every block of the phase has been claimed. `backwards` reverses the order
  // within each range.
  std::optional<std::int64_t> claim(int owner, std::int64_t phase, bool backwards) {
    const int count = static_cast<int>(ranges_.size());
    for (int i = 0; i < count; ++i) {
      Range& range = ranges_[static_cast<std::size_t>((owner + i) % count)];
      const std::int64_t length = range.end - range.begin;
      if (length == 0) continue;
      const std::int64_t phase_end = (phase + 1) * length;
      std::int64_t claimed = range.claimed.load(std::memory_order_relaxed);
      while (claimed < phase_end) {
        if (range.claimed.compare_exchange_weak(claimed, claimed + 1, std::memory_order_acq_rel,
                                                std::memory_order_relaxed)) {
          const std::int64_t index = claimed - phase * length;
          return range.begin + (backwards ? length - 1 - index : index);
        }
      }
    }
    return std::nullopt;
  }

  // Marks `count` claimed blocks of `phase` done (a thread's blocks of the phase, once it has no
  // more to claim); the last of the phase releases the waiters.
  void complete(std::int64_t phase, std::int64_t count) {
    if (count == 0) return;
    const std::int64_t done = done_.fetch_add(count, std::memory_order_acq_rel) + count;
    if (done == (phase + 1) * blocks_) {
      epoch_.fetch_add(1, std::memory_order_seq_cst);
      if (sleepers_.load(std::memory_order_seq_cst) > 0) {
        syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&epoch_), FUTEX_WAKE_PRIVATE, INT_MAX,
                nullptr, nullptr, 0);
      }
    }
  }

  // Returns once every block of `phase` is done.
  void wait_phase(std::int64_t phase) {
    const std::int64_t target = (phase + 1) * blocks_;
    if (done_.load(std::memory_order_acquire) >= target) return;
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
    for (int spins = 0; done_.load(std::memory_order_acquire) < target; ++spins) {
      if ((spins & 63) != 63 || std::chrono::steady_clock::now() < spin_until) {
        _mm_pause();
        continue;
      }
      const std::uint32_t epoch = epoch_.load(std::memory_order_seq_cst);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      if (done_.load(std::memory_order_seq_cst) < target) {
        syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&epoch_), FUTEX_WAIT_PRIVATE, epoch,
                nullptr, nullptr, 0);
      }
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

 private:
  struct alignas(64) Range {
    std::int64_t begin = 0, end = 0;
    // Blocks claimed so far over all phases; phase p owns [p * length, (p + 1) * length).
    std::atomic<std::int64_t> claimed{0};
  };
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

  const std::int64_t blocks_;
  std::vector<Range> ranges_;
  alignas(64) std::atomic<std::int64_t> done_{0};
  alignas(64) std::atomic<std::uint32_t> epoch_{0};
  alignas(64) std::atomic<int> sleepers_{0};
};

}  // namespace voxrt::backends::cpu::recurrent
