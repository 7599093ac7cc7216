// engine/job/job_iolog.h
//
// JobIologState is the write_iolog= log of one JobThread (fio's iolog.c:
// init_iolog_write, log_file, log_io_u): the log's text as it grows
// ("fio version 3 iolog", then one line per file action and per I/O, times
// in µs since `start`) and which files the log shows open. It is plain
// data: the logic is JobThread's (job_iolog.cc), next to the files' open,
// close, pre-read and unlink it logs.
//
// Invariants: without write_iolog the state stays empty; with it, `open`
//  has one entry per file of the clone from the job's start.
// Thread-safety: thread-compatible; part of one JobThread.
// Cost: the text grows by one line per logged I/O (the log is the output).
#ifndef BLKLAB_ENGINE_JOB_JOB_IOLOG_H_
#define BLKLAB_ENGINE_JOB_JOB_IOLOG_H_

#include <string>
#include <vector>

#include "engine/sim/time.h"

namespace blklab::job {

struct JobIologState {
  std::string text;        // the log's text
  sim::SimTime start = 0;  // its time origin (init_iolog)
  std::vector<bool> open;  // per file: opened in the log and not closed
};

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_JOB_IOLOG_H_
