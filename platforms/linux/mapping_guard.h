// What happens to a verified mapping when its file changes underneath it.
// A file truncated while mapped makes every access past the new end raise
// SIGBUS, which kills the process by default. ember turns that into an error
// it can report: a process-wide SIGBUS handler, installed once on the first
// registration and chained to whatever handler was there before, maps a
// zero-filled page over the faulting page of a registered mapping and marks
// the mapping as faulted; the faulting load then reads zeros and the next
// check_intact() (ModelFile, Model) reports EMBER_ERR_IO. Faults outside
// registered mappings go to the previous handler (or the default action).
// Registration is per mapping and optional (ember_model_options.guard_mapping,
// ModelFile::Options::guard_mapping): a host that owns SIGBUS turns it off,
// and then the handler is never installed by ember.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace ember {

// Registers [base, base + size) with the SIGBUS guard. Returns a slot for
// unregister_mapping/mapping_faulted, or -1 when all slots are in use (the
// mapping is then unguarded: a truncation kills the process as before).
int register_mapping(const void* base, size_t size);
// Must be called before the range is unmapped. -1 is a no-op.
void unregister_mapping(int slot);
// True once a SIGBUS inside the slot's range was absorbed.
bool mapping_faulted(int slot);

// What stat() says about a path: enough to tell "the same file, unchanged"
// from "replaced", "truncated" or "written to".
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool same_file(const FileIdentity& o) const { return device == o.device && inode == o.inode; }
};
// Errors: EMBER_ERR_IO when the path cannot be stat'ed.
Result<FileIdentity> file_identity(const std::string& path);

}  // namespace ember
