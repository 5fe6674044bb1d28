// A strategy that does not fit the program is a located error before anything runs
// (parallel/partition/strategy.h): the file, the line and column of the offending entry, its
// line with a caret, and the actual values. Each case is a small strategy file for the MLP of
// tests/parallel/mlp_small.sp (net.l1.w f64[16, 32], ..., x f64[8, 16], y i32[8]).
#include <gtest/gtest.h>

#include <mutex>

#include "autodiff/install.h"
#include "lang/diagnostics.h"
#include "ops/ops.h"
#include "parallel/partition/json_locations.h"
#include "parallel/partition/strategy.h"
#include "spmd_common.h"

namespace spora::parallel::testing {
namespace {

const ir::Graph& step() {
  static std::once_flag once;
  static StepGraph p;
  std::call_once(once, [] {
    ops::register_all();
    autodiff::install();
    p = distributed::build_training_step(mlp_options());
  });
  return *p.step;
}

// The message of the lang::UserError that parsing `json` (as the file "s.json") throws.
std::string error_of(const std::string& json) {
  try {
    parse_strategy(json, step(), "s.json");
  } catch (const lang::UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << json;
  return "";
}

TEST(StrategyErrors, UnknownParameterListsTheClosestNamesFirst) {
  const std::string e = error_of(R"json({
  "mesh": [4],
  "layouts": {
    "x": "(4, 1)",
    "net.l1.ww": "(4, 1)"
  }
})json");
  EXPECT_EQ(e.rfind("s.json:5:5: 'net.l1.ww' is not a parameter or input of the step; its 8 "
                    "names, closest first: net.l1.w, ",
                    0),
            0u)
      << e;
  EXPECT_NE(e.find("\n    \"net.l1.ww\": \"(4, 1)\"\n    ^"), std::string::npos) << e;
}

TEST(StrategyErrors, SplitThatDoesNotDivideNamesDimensionAndSize) {
  const std::string e = error_of(R"json({"mesh": [3],
 "layouts": {"net.l1.w": "(3, 1)"}})json");
  EXPECT_EQ(e.rfind("s.json:2:14: split (3, 1) of 'net.l1.w' does not divide dimension 0 of "
                    "size 16 ('net.l1.w' is ",
                    0),
            0u)
      << e;
  EXPECT_NE(e.find("mesh axis m0 has 3 devices)"), std::string::npos) << e;
  // The second dimension, by the tensor-map form and a named axis.
  const std::string named = error_of(R"json({"mesh": [2, 3], "axes": ["dp", "tp"],
  "layouts": {"x": "[dp, tp]"}})json");
  EXPECT_EQ(named.rfind("s.json:2:15: split [dp, tp] of 'x' does not divide dimension 1 of "
                        "size 16",
                        0),
            0u)
      << named;
  EXPECT_NE(named.find("mesh axis tp has 3 devices)"), std::string::npos) << named;
}

// Found by tests/fuzz/fuzz_strategy: nlohmann's out_of_range for a number past a double's range
// escaped (only parse errors were caught).
TEST(StrategyErrors, ANumberPastADoublesRangeIsInvalidJson) {
  EXPECT_EQ(error_of("{\"mesh\": [2E44444]}"),
            "s.json: not valid JSON: [json.exception.out_of_range.406] number overflow parsing "
            "'2E44444'");
}

TEST(StrategyErrors, MeshThatDoesNotMatchTheRanks) {
  const Strategy s = parse_strategy("{\n  \"mesh\": [2, 2]\n}\n", step(), "s.json");
  EXPECT_NO_THROW(check_ranks(s, 4, "--ranks"));
  try {
    check_ranks(s, 2, "--ranks");
    ADD_FAILURE() << "no error for a mesh of 4 on 2 ranks";
  } catch (const lang::UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              "s.json:2:3: the mesh [2, 2] has 4 devices, but --ranks is 2\n"
              "  \"mesh\": [2, 2]\n"
              "  ^");
  }
}

TEST(StrategyErrors, OtherEntriesAreLocatedToo) {
  // An operator strategy the node's rule does not have: its names, closest first.
  const std::string op = error_of(R"json({"mesh": [2],
"ops": {"0": "no-such-strategy"}})json");
  EXPECT_EQ(op.rfind("s.json:2:9: node 0 (", 0), 0u) << op;
  // Not JSON: the position of the parse error.
  EXPECT_EQ(error_of("{\"mesh\": [2],\n \"layouts\": {\"x\" \"(2, 1)\"}}").rfind("s.json:2:", 0),
            0u);
  EXPECT_EQ(error_of("{\"mesh\": [0]}").rfind("s.json:1:2: mesh axis sizes are positive", 0), 0u);
  EXPECT_EQ(error_of("{\"mesh\": [2], \"layout\": {}}").rfind("s.json:1:15: unknown key", 0), 0u);
  EXPECT_EQ(error_of("{\"mesh\": [2], \"layouts\": {\"net.l1.w\": \"(2, 1) partial(m0)\"}}")
                .rfind("s.json:1:27: ", 0),
            0u);
}

TEST(StrategyErrors, LocationsAndClosestNames) {
  const JsonLocations loc("f.json", "{\"a\": {\"b\\\"c\": 1,\n\t\"d\": [1, {\"e\": 2}]}}");
  EXPECT_EQ(loc.at("/a"), "f.json:1:2");
  EXPECT_EQ(loc.at("/a/b\"c"), "f.json:1:8");
  EXPECT_EQ(loc.at("/a/d"), "f.json:2:2");
  EXPECT_EQ(loc.at("/a/d/e"), "f.json");  // three levels down: not recorded
  EXPECT_EQ(loc.quote("/a/d"), "\n\t\"d\": [1, {\"e\": 2}]}}\n\t^");
  EXPECT_EQ(closest_first("net.l2.w", {"x", "net.l1.b", "net.l1.w", "net.l2.w"}),
            (std::vector<std::string>{"net.l2.w", "net.l1.w", "net.l1.b", "x"}));
}

}  // namespace
}  // namespace spora::parallel::testing
