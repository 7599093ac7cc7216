// clients/cli/remote.h
//
// `blklab --server ADDR COMMAND ...`: the CLI as a client of blklabd
// (proto/blklab/v1/service.proto). Built only in the full build (not with
// BLKLAB_ENGINE_ONLY); main.cc calls it when BLKLAB_CLI_REMOTE is defined.
//
//   fio [blklab and fio options] [job files]
//                     the job bundle (job files and their includes read
//                     locally, the other arguments, --host as a preset, a
//                     stored host "hosts/NAME" or an inline spec file) runs
//                     on the server; progress streams on a terminal; prints
//                     what the in-process `blklab fio` prints
//   hosts list | get NAME | create NAME FILE | delete NAME | presets
//   jobs list [--state=S] [--host=H] | get ID [--fio=json|normal] |
//        cancel ID | watch ID | delete ID
//   health [SERVICE]  grpc.health.v1 check; exit 0 when SERVING
// Listing and get commands print aligned tables, or with --json the
// messages as protobuf's JSON.
//
// Connection options (before the command): --server ADDR (or
// BLKLAB_SERVER), --token_file FILE (or BLKLAB_TOKEN holding the token
// itself) for "authorization: Bearer", --tls_ca_file FILE for TLS (PEM
// roots; without it the channel is plaintext).
#ifndef BLKLAB_CLIENTS_CLI_REMOTE_H_
#define BLKLAB_CLIENTS_CLI_REMOTE_H_

#include <string>
#include <vector>

namespace blklab::cli {

struct RemoteOptions {
  std::string server;       // host:port
  std::string token_file;   // first line is the token
  std::string token;        // used when token_file is empty (BLKLAB_TOKEN)
  std::string tls_ca_file;  // PEM root certificates; empty: plaintext
};

// Runs `command args...` against the server; returns the exit code.
int RunRemoteCommand(const RemoteOptions& options, const std::string& command,
                     const std::vector<std::string>& args);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_REMOTE_H_
