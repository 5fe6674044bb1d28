// Ring channels (ring.cpp): the ring order of each channel, the symbolic checker's proof of
// every channelled ring schedule, the text form, and the options that are refused.
#include <gtest/gtest.h>

#include <stdexcept>

#include "parallel/collectives/algorithms.h"
#include "parallel/collectives/checker.h"
#include "parallel/collectives/text.h"

namespace spora::parallel {
namespace {

// Two nodes of 8 devices, 4 channels: channel c leaves a node from local device 2c + 1 (the
// last of NIC c's pair) and enters the next at 2c + 2.
TEST(RingChannels, OrderPerChannel) {
  EXPECT_EQ(ring_channel_order(16, 8, 4, 0),
            (std::vector<int>{2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9}));
  EXPECT_EQ(ring_channel_order(16, 8, 4, 1),
            (std::vector<int>{4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11}));
  EXPECT_EQ(ring_channel_order(16, 8, 4, 3),
            (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}));
  // One channel per device (8 NICs): channel c leaves from device c.
  EXPECT_EQ(ring_channel_order(16, 8, 8, 2),
            (std::vector<int>{3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10}));
  // One channel is the plain ring whatever the layout; one node: a rotation of it.
  EXPECT_EQ(ring_channel_order(6, 4, 1, 0), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(ring_channel_order(4, 0, 2, 0), (std::vector<int>{2, 3, 0, 1}));
  EXPECT_THROW(ring_channel_order(6, 4, 2, 0), std::invalid_argument);
  EXPECT_THROW(ring_channel_order(8, 4, 2, 2), std::invalid_argument);
}

// Every ring collective with 2, 3 and 4 channels, on every nodes x devices layout up to 24
// ranks, counts that leave channels and blocks uneven (or empty), chunked and not.
TEST(RingChannels, CheckerProvesEveryLayout) {
  int proved = 0;
  for (Collective collective : supported_collectives(Algorithm::Ring))
    for (int p = 1; p <= 24; ++p)
      for (int g = 1; g <= p; ++g) {
        if (p % g != 0) continue;
        for (int channels : {2, 3, 4})
          for (std::int64_t count :
               {std::int64_t{0}, std::int64_t{1}, std::int64_t{2 * p + 1}, std::int64_t{7 * p + 5}})
            for (int chunks : {1, 2}) {
              if (chunks > 1 && p > 8) continue;
              const CollectiveSpec spec{collective, ReduceOp::Sum, p, count};
              const Schedule s = build_schedule(Algorithm::Ring, spec, {chunks, g, channels});
              const CheckResult result = check_schedule(s);
              ASSERT_TRUE(result.ok())
                  << collective_name(collective) << " ranks=" << p << " ranks_per_node=" << g
                  << " channels=" << channels << " count=" << count << " chunks=" << chunks << ": "
                  << result.error;
              ++proved;
            }
      }
  EXPECT_GT(proved, 1000);
}

// Channels split the data: 4 channels of a 2-node all-reduce send 4 x as many messages of a
// quarter of the size, and each rank still moves 2(p-1)/p of the data.
TEST(RingChannels, MessagesAndVolume) {
  const CollectiveSpec spec{Collective::AllReduce, ReduceOp::Sum, 16, 16 * 4 * 100};
  auto sent = [&](int channels, std::int64_t* elements) {
    const Schedule s = build_schedule(Algorithm::Ring, spec, {1, 8, channels});
    int messages = 0;
    *elements = 0;
    for (const Step& step : s.ranks[5].steps)
      if (step.kind == StepKind::Send) ++messages, *elements += step.count();
    return messages;
  };
  std::int64_t one = 0, four = 0;
  EXPECT_EQ(sent(1, &one), 30);
  EXPECT_EQ(sent(4, &four), 120);
  EXPECT_EQ(one, 2 * 15 * 400);
  EXPECT_EQ(four, one);
}

TEST(RingChannels, TextFormRoundTrip) {
  const Schedule s =
      build_schedule(Algorithm::Ring, {Collective::AllReduce, ReduceOp::Sum, 4, 9}, {1, 2, 2});
  const std::string text = print_schedule(s);
  EXPECT_NE(text.find("ranks-per-node=2 channels=2\n"), std::string::npos) << text;
  EXPECT_EQ(parse_schedule(text, "t.sched").options.channels, 2);
  EXPECT_EQ(print_schedule(parse_schedule(text, "t.sched")), text);
  const Schedule one =
      build_schedule(Algorithm::Ring, {Collective::AllReduce, ReduceOp::Sum, 4, 9});
  EXPECT_EQ(print_schedule(one).find("channels"), std::string::npos);
}

TEST(RingChannels, RefusedOptions) {
  const CollectiveSpec spec{Collective::AllReduce, ReduceOp::Sum, 8, 64};
  EXPECT_THROW(build_schedule(Algorithm::Tree, spec, {1, 0, 2}), std::invalid_argument);
  EXPECT_THROW(build_schedule(Algorithm::Ring, spec, {1, 0, 0}), std::invalid_argument);
  EXPECT_THROW(build_schedule(Algorithm::Ring, spec, {1, 3, 2}), std::invalid_argument);
}

}  // namespace
}  // namespace spora::parallel
