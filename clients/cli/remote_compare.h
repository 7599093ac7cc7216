// clients/cli/remote_compare.h
//
// `blklab --server ADDR compare ...`: the comparison `blklab compare` would
// run, sent to blklabd's ComparisonService. The arguments are parsed here
// first, exactly as in-process (so errors are the same and nothing is sent
// that would fail), through inputs that record every file and ${VAR} read;
// those go in the bundle under the names the arguments use. Without --host,
// --fleet or a spec file the bundle names the host the in-process run would
// use ($BLKLAB_HOST or the default preset). Progress streams to stderr on a
// terminal; the output is GetComparisonOutput's text in --format: the bytes
// the in-process command prints. --dry-run runs here (nothing is sent);
// --plot is refused (the charts need the cells' stacks, which stay on the
// servers); --jobs is the server's business (--compare_workers, --fleet).
//
//   comparisons list | get ID | output ID [--format=F] | cancel ID | delete ID
//                     the comparisons a server keeps
//
// Thread-safety: single-threaded (one command).
#ifndef BLKLAB_CLIENTS_CLI_REMOTE_COMPARE_H_
#define BLKLAB_CLIENTS_CLI_REMOTE_COMPARE_H_

#include <string>
#include <vector>

#include "clients/cli/remote_client.h"

namespace blklab::cli {

int RunRemoteCompare(RemoteClient& client, const std::vector<std::string>& args);
int RunRemoteComparisons(RemoteClient& client, const std::vector<std::string>& args);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_REMOTE_COMPARE_H_
