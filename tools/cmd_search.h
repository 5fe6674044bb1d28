// `spora search` (tools/cmd_search.cpp): search a parallel strategy for a training step.
//   spora search model.sp --cluster c.yaml --mesh 2x4 --algo dp|rec|propagate|exhaustive
//                [--top 5] [--memory-limit GB] [--batch N] [--optimizer sgd] [-o strategy.json]
//                [--fix 'NAME=(2, 1)' ...]   (propagate: semi-auto, pinned parameter layouts)
// Builds the step's cost graph on the mesh (parallel/search/from_ir.h) with the analytic
// oracle's numbers from the cluster spec, runs the search, prints the top strategies (predicted
// step time, memory per device, whether it fits, the parameters' layouts) and writes the best
// as the partitioner's strategy JSON. Each listed strategy is also partitioned and simulated on
// the cluster (sim/spmd_step.h) for the "simulated" column, unless --no-simulate. --algo rec
// prints its one strategy (forward operators' shapes, parallel/search/rec.h) and writes it
// over a 1-D mesh of all the devices.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "parallel/search/from_ir.h"
#include "sim/cluster_spec.h"
#include "sim/step_program.h"

namespace spora::tools {

CLI::App* add_search_subcommand(CLI::App& app);
int run_search_subcommand();

// The analytic oracle's device numbers for a mesh of a cluster (what `spora search` uses):
// compute by the simulator's cost model, each mesh axis on the intra-node link while its span of
// consecutive ranks stays inside a node, else on the network; with an optimizer (sgd, momentum,
// adam), each parameter's update as the simulator runs it (sim::update_ops).
parallel::search::DeviceModel search_device_model(const sim::ClusterSpec& c,
                                                  const parallel::Mesh& mesh,
                                                  const std::string& optimizer = "");

// `spora run FILE --mesh M --ranks N` without --strategy (semi-auto parallelism): the strategy
// file propagated from the program's annotations (`shard(x, (2, 1))`, `shard=`) on mesh M
// (parallel/search/from_ir.h propagate_from_annotations, the analytic oracle's default
// device), written to a file unique to this process; returns its path (the caller removes it).
std::string write_annotation_strategy(const sim::StepProgram& program, const std::string& mesh);

}  // namespace spora::tools
