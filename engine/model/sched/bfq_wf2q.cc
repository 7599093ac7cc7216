// engine/model/sched/bfq_wf2q.cc: bfq's B-WF2Q+ (block/bfq-wf2q.c): the
// service trees' active and idle sets, entity activation and deactivation,
// the virtual time, and the choice of the next entity and queue. The rest of
// bfq is in bfq.cc (bfq.h describes the whole).
#include <algorithm>
#include <limits>

#include "engine/model/sched/bfq.h"

namespace blklab::model {
void BfqSched::ActiveInsert(ServiceTree& st, Entity* e) {
  // bfq_active_insert: a queue also goes to the head of bfqd->active_list.
  st.active.insert({e->finish, e->id});
  e->active = true;
  if (e->bfqq != nullptr) e->bfqq->active_pos = active_list_.insert(active_list_.begin(), e->bfqq);
}

void BfqSched::ActiveErase(ServiceTree& st, Entity* e) {
  st.active.erase({e->finish, e->id});
  e->active = false;
  if (e->bfqq != nullptr) active_list_.erase(e->bfqq->active_pos);
}

void BfqSched::ForgetIdle(ServiceTree& st) {
  // bfq_forget_idle: with nothing active, vtime catches up with the last idle
  // finish; the first idle entity whose finish vtime passed leaves wsum.
  if (st.active.empty() && !st.idle.empty()) st.vtime = std::max(st.vtime, std::prev(st.idle.end())->first);
  if (!st.idle.empty() && st.idle.begin()->first <= st.vtime) {
    Entity* e = st.by_id[st.idle.begin()->second];
    st.idle.erase(st.idle.begin());
    st.by_id.erase(e->id);
    st.wsum -= static_cast<uint64_t>(e->weight);
    e->idle = false;
  }
}

void BfqSched::ActivateEntity(Entity* e, bool requeue) {
  Group* g = e->parent;
  ServiceTree& st = g->st[e->cls];
  const bool in_service = g->in_service == e;
  bool backshifted = false;
  if (in_service || e->active) {
    // __bfq_requeue_entity: the in-service entity starts where its service
    // ended; an active one only moves for its new budget.
    if (in_service) {
      e->finish = e->start + Delta(e->service, e->weight);
      e->start = e->finish;
    } else {
      ActiveErase(st, e);
    }
  } else {
    // __bfq_activate_entity; backshifted: a queue resuming its budget after
    // waiting for its own requests starts from its old finish, not vtime.
    backshifted = e->bfqq != nullptr && e->bfqq->non_blocking_wait_rq && st.vtime > e->finish;
    const uint64_t min_vstart = backshifted ? e->finish : st.vtime;
    if (e->idle) {
      st.idle.erase({e->finish, e->id});
      e->idle = false;
      e->start = std::max(min_vstart, e->finish);
    } else {
      e->start = min_vstart;
      st.wsum += static_cast<uint64_t>(e->weight);
      st.by_id[e->id] = e;
    }
  }
  if (!in_service || requeue) {
    if (e->bfqq != nullptr) {
      // __bfq_entity_update_weight_prio: a weight change applies here.
      const int w = e->bfqq->orig_weight * e->bfqq->wr_coeff;
      if (w != e->weight) {
        st.wsum += static_cast<uint64_t>(w);
        st.wsum -= static_cast<uint64_t>(e->weight);
        e->weight = w;
      }
    }
    e->finish = e->start + Delta(e->budget, e->weight);
    if (backshifted && st.vtime > e->finish) {
      const uint64_t d = (st.vtime - e->finish) / static_cast<uint64_t>(e->bfqq->wr_coeff);
      e->start += d;
      e->finish += d;
    }
    ActiveInsert(st, e);
    if (in_service) g->in_service = nullptr;
  }
  // The parent group: activate it with this child's budget if it is idle.
  if (g != &root_) {
    Entity& ge = g->entity;
    if (!ge.active && g->entity.parent->in_service != &ge) {
      ge.budget = e->budget;
      ActivateEntity(&ge, false);
    }
  }
}

void BfqSched::DeactivateEntity(Entity* e, bool keep_service) {
  // __bfq_deactivate_entity: charged the service it received; on the idle
  // tree while its finish is ahead of vtime, else forgotten.
  Group* g = e->parent;
  ServiceTree& st = g->st[e->cls];
  if (e->active) ActiveErase(st, e);
  if (g->in_service == e) g->in_service = nullptr;
  e->finish = e->start + Delta(e->service, e->weight);
  if (!keep_service) e->service = 0;
  if (e->finish > st.vtime) {
    st.idle.insert({e->finish, e->id});
    e->idle = true;
  } else {
    st.by_id.erase(e->id);
    st.wsum -= static_cast<uint64_t>(e->weight);
  }
}

void BfqSched::Served(Queue* q, uint64_t sectors) {
  // bfq_bfqq_served: the queue and every ancestor; each level's vtime.
  for (Entity* e = &q->entity; e != nullptr;) {
    e->service += sectors;
    ServiceTree& st = e->parent->st[e->cls];
    if (st.wsum > 0) st.vtime += Delta(sectors, static_cast<int>(std::min<uint64_t>(st.wsum, INT32_MAX)));
    ForgetIdle(st);
    e = e->parent == &root_ ? nullptr : &e->parent->entity;
  }
}

BfqSched::Entity* BfqSched::NextEntity(Group* g, sim::SimTime now) {
  // bfq_lookup_next_entity: RT, BE, IDLE in order; IDLE first once it waited
  // BFQ_CL_IDLE_TIMEOUT.
  int first = 0;
  if (now > last_idle_class_served_ + kClassIdleTimeoutNs) {
    if (!g->st[2].active.empty()) first = 2;
    last_idle_class_served_ = now;
  }
  for (int i = 0; i < kNumClasses; ++i) {
    const int cls = (first + i) % kNumClasses;
    ServiceTree& st = g->st[cls];
    if (st.active.empty()) continue;
    uint64_t min_start = std::numeric_limits<uint64_t>::max();
    for (const auto& [finish, id] : st.active) min_start = std::min(min_start, st.by_id[id]->start);
    const uint64_t vtime = std::max(st.vtime, min_start);
    if (g->in_service == nullptr) {
      st.vtime = vtime;
      ForgetIdle(st);
    }
    for (const auto& [finish, id] : st.active) {
      Entity* e = st.by_id[id];
      if (e->start <= vtime) return e;
    }
  }
  return nullptr;
}

BfqSched::Queue* BfqSched::SelectNextQueue(sim::SimTime now) {
  // bfq_get_next_queue: descend from the root, each level's next entity in
  // service (off its active tree, still in wsum).
  Group* g = &root_;
  for (;;) {
    Entity* e = NextEntity(g, now);
    if (e == nullptr) return nullptr;
    ActiveErase(g->st[e->cls], e);
    g->in_service = e;
    if (e->bfqq != nullptr) return e->bfqq;
    g = e->my_group;
  }
}

}  // namespace blklab::model
