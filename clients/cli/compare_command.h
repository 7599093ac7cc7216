// clients/cli/compare_command.h
//
// `blklab compare`: one fio job on a baseline host and on variants of it,
// run in-process as independent cells, printed the way kernel developers post
// a comparison (Device / IOPS / sys / contention / diff, REFERENCE_CASES.md),
// with what changed most in the profile and the locks.
//
//   blklab compare --host=PRESET|FILE [--variant NAME:PATH=VALUE[,PATH=VALUE...]]...
//       [--matrix PATH=V1,V2,...]... [--samples=N] [--seed=N] [--jobs=N]
//       [--format=table|markdown|csv|json] [--baseline=NAME] -- FIO-ARGS...
//   blklab compare SPEC.yaml [--jobs=N] [--format=...]
// --dry-run prepares and checks every cell (host overlays, fio options,
// devices) and prints one line per cell without running any.
//
// A variant overlays host-spec fields by path (host_overlay.h:
// `knobs.dd_serialize_dispatch=true`, `devices.nullb0.queue.scheduler=none`,
// `cpus.count=64`) and fio options (`fio.iodepth=32`, applied to every job
// after its own options). The baseline is the variant --baseline names, else
// the first variant without an overlay (`--variant before:`), else an
// implicit one named `baseline` (the host and job as given).
// A matrix axis is a path (host or fio.) and its values; the cells are every
// point of the axes' product (last axis fastest) x every variant x every
// sample, and each variant is compared with the baseline at the same point.
//
// Seeds: every cell runs with --seed=SEED (the comparison's). Sample 0 runs
// the job as given, so the baseline's sample 0 equals `blklab fio
// --host=H --seed=SEED FIO-ARGS`; sample k >= 1 adds randseed=SEED+k to every
// job. Variants of one sample share its random stream (common random
// numbers), so a difference between them is the variant's, not sampling
// noise. A cell's result depends only on its host, job and seed: not on
// --jobs, nor on the order cells run in.
//
// A spec file (YAML or JSON) holds the same:
//   host: rc4-desktop-7950x          # preset or file (relative to the spec)
//   fio: [--name=t, --rw=randread]   # or one string, split on spaces
//   seed: 0
//   samples: 1
//   baseline: before                 # optional, as --baseline
//   variants: {before: {}, after: {knobs.dd_serialize_dispatch: true}}
//   matrix: {fio.iodepth: [1, 4, 16]}
// Job files named in `fio` (positional arguments) are read relative to the
// spec file, as its host file is.
//
// A fleet inventory replaces the one host (`fleet: FILE` in a spec, or
// --fleet=FILE): a YAML or JSON map `hosts: {TYPE: PRESET|FILE, ...}` of the
// fleet's host types (files relative to the inventory). The comparison runs
// on every host type (the first axis, `host`); the table ends with the host
// types ranked by each variant's IOPS change, which gain and which lose the
// most. A job without filename= uses each host's first device.
#ifndef BLKLAB_CLIENTS_CLI_COMPARE_COMMAND_H_
#define BLKLAB_CLIENTS_CLI_COMPARE_COMMAND_H_

#include <string>
#include <vector>

namespace blklab::cli {

// Returns the process exit code: 0, 1 for a failed cell or bad input (the
// error names the cell, option or spec field), 2 for a usage error.
int RunCompareCommand(const std::vector<std::string>& args);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_COMPARE_COMMAND_H_
