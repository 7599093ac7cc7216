// engine/model/page_cache_internal.h
//
// Constants shared by the page cache's source files (page_cache.cc: reads,
// readahead, mmap, bio completion; page_cache_writeback.cc: writes, dirty
// throttling, writeback, the flusher). Not a public API: only those files
// include it.
//
// Invariants: compile-time constants mirroring the kernel's limits.
// Thread-safety: constants only.
// Cost: none at run time.
#ifndef BLKLAB_ENGINE_MODEL_PAGE_CACHE_INTERNAL_H_
#define BLKLAB_ENGINE_MODEL_PAGE_CACHE_INTERNAL_H_

#include <cstdint>

namespace blklab::model::page_cache_internal {

// ReadPages' `mark` when no page of the read carries PG_readahead.
inline constexpr uint64_t kNoMark = ~uint64_t{0};
// BIO_MAX_VECS: at most 256 pages per bio (1 MiB).
inline constexpr uint32_t kMaxBioPages = 256;

}  // namespace blklab::model::page_cache_internal

#endif  // BLKLAB_ENGINE_MODEL_PAGE_CACHE_INTERNAL_H_
