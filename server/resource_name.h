// server/resource_name.h
//
// The API's resource names: "hosts/{host}" and "jobs/{job}", where {host}
// and {job} match [a-z0-9][a-z0-9-]{0,62}. ParseResourceName is the server's
// one way to take the id out of a name, for names that come in with a
// request and for names the server reads back from its store alike.
//
// Thread-safety: stateless functions; safe from any thread.
// Cost: linear in the length of the name.
#ifndef BLKLAB_SERVER_RESOURCE_NAME_H_
#define BLKLAB_SERVER_RESOURCE_NAME_H_

#include <string>

#include "absl/status/statusor.h"

namespace blklab::server {

// "jobs/x" -> "x" (InvalidArgument when `name` is not "<collection>/<id>"
// with a valid id).
absl::StatusOr<std::string> ParseResourceName(const std::string& name, const std::string& collection);

// [a-z0-9][a-z0-9-]{0,62}.
bool IsValidResourceId(const std::string& id);

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_RESOURCE_NAME_H_
