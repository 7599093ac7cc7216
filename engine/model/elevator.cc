#include "engine/model/elevator.h"

#include "engine/model/sched/bfq.h"
#include "engine/model/sched/kyber.h"
#include "engine/model/sched/mq_deadline.h"

namespace blklab::model {

namespace {
// Every scheduler the model has (elv_list). A new scheduler: its file under
// sched/ with an `extern const ElevatorType`, and a line here.
const ElevatorType* const kElevatorTypes[] = {
    &kMqDeadlineElevator,
    &kKyberElevator,
    &kBfqElevator,
};
}  // namespace

const ElevatorType* FindElevatorType(host::Scheduler s) {
  for (const ElevatorType* t : kElevatorTypes) {
    if (t->name == s) return t;
  }
  return nullptr;
}

}  // namespace blklab::model
