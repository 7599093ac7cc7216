// engine/model/blk_merge.cc: RequestQueue's bio splits and merges
// (block/blk-merge.c, blk-mq.c): a bio over the queue's max_sectors split
// into pieces (__bio_split_to_limits, bio_chain), and merges into the plug's
// last request (blk_attempt_plug_merge) and into a software queue's last
// eight (blk_bio_list_merge). The rest of the
// request queue is in blk_mq.cc; the schedulers' merges in sched/.
#include <algorithm>
#include <vector>

#include "engine/model/blk_mq.h"

namespace blklab::model {
namespace {

// blk_rq_merge_ok: same queue and op, not passthrough, same I/O priority
// and cgroup (blk_cgroup_mergeable).
bool RqMergeOk(const RequestQueue* q, const Request* rq, const Bio* bio) {
  return rq->q == q && rq->op == bio->op && !rq->passthrough && rq->ioprio_class == bio->ioprio_class &&
         rq->ioprio_level == bio->ioprio_level && rq->blkcg == bio->blkcg;
}

// bio_attempt_back_merge / bio_attempt_front_merge: link `bio` at the
// request's tail or head and grow the request.
void MergeBio(Request* rq, Bio* bio, bool front) {
  if (front) {
    bio->bi_next = rq->bio;
    rq->bio = bio;
    rq->sector = bio->sector;
  } else {
    rq->biotail->bi_next = bio;
    rq->biotail = bio;
    bio->bi_next = nullptr;
  }
  rq->bytes += bio->bytes;
  ++rq->nr_bios;
}

// bio_chain: the pieces of a split bio end the original once all have
// ended, with the first error any of them met.
class SplitBio final : public BioOwner {
 public:
  SplitBio(Bio* parent, uint32_t pieces) : parent_(parent), remaining_(pieces), bios_(pieces) {}
  Bio& piece(uint32_t i) { return bios_[i]; }
  void BioEndio(sim::Cpu& cpu, Bio* bio, BlkStatus status) override {
    if (status != BlkStatus::kOk && status_ == BlkStatus::kOk) status_ = status;
    if (--remaining_ > 0) return;
    Bio* parent = parent_;
    const BlkStatus s = status_;
    delete this;
    parent->owner->BioEndio(cpu, parent, s);
  }

 private:
  Bio* parent_;
  uint32_t remaining_;
  BlkStatus status_ = BlkStatus::kOk;
  std::vector<Bio> bios_;
};

}  // namespace

sim::Task RequestQueue::SubmitSplit(sim::Cpu& cpu, Bio* bio, Plug* plug) {
  // __bio_split_to_limits (bio_split_rw): the head of max_sectors goes on,
  // the rest is resubmitted (submit_bio_noacct) and split again, so a bio
  // becomes pieces of the queue's largest request, the last shorter; each
  // is its own request in /sys/block/X/stat.
  const uint32_t n = (bio->bytes + max_request_bytes_ - 1) / max_request_bytes_;
  auto* split = new SplitBio(bio, n);
  for (uint32_t i = 0; i < n; ++i) {
    Bio& b = split->piece(i);
    b = *bio;
    b.sector = bio->sector + ((uint64_t{i} * max_request_bytes_) >> kSectorShift);
    b.bytes = std::min(max_request_bytes_, bio->bytes - i * max_request_bytes_);
    b.owner = split;
    b.bi_next = nullptr;
  }
  kernel_.Count(Counter::k_bio_split, n - 1);
  for (uint32_t i = 0; i < n; ++i) {
    if (i > 0) cpu.Charge(kernel_.fn.submit_bio_noacct, kernel_.costs().submit_bio_noacct);
    co_await SubmitBio(cpu, &split->piece(i), plug);
  }
}

bool RequestQueue::AttemptPlugMerge(sim::Cpu& cpu, Plug* plug, Bio* bio) {
  // blk_attempt_plug_merge: only the last request of the plug, lock-free;
  // a back merge within max_sectors (512 KiB by default).
  if (plug == nullptr || plug->mq_list.empty() || config_.sysfs.nomerges == 2) return false;
  cpu.Charge(kernel_.fn.blk_attempt_plug_merge, kernel_.costs().plug_merge);
  Request* last = plug->mq_list.back();
  if (!RqMergeOk(this, last, bio)) return false;
  if (last->sector + (last->bytes >> kSectorShift) != bio->sector) return false;
  if (last->bytes + bio->bytes > max_request_bytes_) return false;
  MergeBio(last, bio, /*front=*/false);
  disk_.merges[bio->op == ReqOp::kWrite ? 1 : 0] += 1;
  kernel_.Count(Counter::k_plug_merge);
  return true;
}

bool RequestQueue::SwQueueMerge(sim::Cpu& cpu, RequestList& list, Hctx* hctx, Bio* bio) {
  // blk_bio_list_merge: list_for_each_entry_reverse with a stop count of 8;
  // blk_rq_merge_ok and blk_try_merge (back: the request ends where the bio
  // starts; front: the bio ends where the request starts). A request that
  // is adjacent but would grow past max_sectors ends the scan
  // (BIO_MERGE_FAILED).
  const auto& c = kernel_.costs();
  Request* last8[8];
  size_t n = 0;
  for (Request* r = list.front(); r != nullptr; r = r->next) {
    if (r->mq_hctx != hctx) continue;
    last8[n % 8] = r;
    ++n;
  }
  const size_t scan = std::min<size_t>(n, 8);
  const uint64_t bio_sectors = bio->bytes >> kSectorShift;
  for (size_t i = 0; i < scan; ++i) {
    Request* rq = last8[(n - 1 - i) % 8];
    cpu.Charge(kernel_.fn.blk_mq_attempt_bio_merge, (i == 0 ? c.sw_queue_merge_base : 0) + c.sw_queue_merge_per_rq);
    if (!RqMergeOk(this, rq, bio)) continue;
    const bool back = rq->sector + (rq->bytes >> kSectorShift) == bio->sector;
    const bool front = bio->sector + bio_sectors == rq->sector;
    if (!back && !front) continue;
    if (rq->bytes + bio->bytes > max_request_bytes_) return false;
    MergeBio(rq, bio, /*front=*/!back);
    kernel_.WriteLine(cpu, rq->line);
    disk_.merges[bio->op == ReqOp::kWrite ? 1 : 0] += 1;
    kernel_.Count(Counter::k_sw_queue_merge);
    return true;
  }
  return false;
}

}  // namespace blklab::model
