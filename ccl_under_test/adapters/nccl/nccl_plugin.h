// NCCL as a plug-in (see ccl_under_test/api/ccl_plugin.h).
//
// Default environment (job.env overrides any of it; every value is stored as a run tag):
//   NCCL_IB_TIMEOUT=20, NCCL_IB_RETRY_CNT=7  NCCL's own defaults, made explicit so that the run
//       records what it ran with: an InfiniBand/RoCE QP retransmits after 4.096 us x 2^timeout
//       and gives up after retry_cnt retransmits, about 4.3 s x 7 = 30 s with these values.
//   NCCL_SOCKET_IFNAME==eth1,...  the lab's data NICs (exact names), so that NCCL's bootstrap
//       and socket transport use the NICs the faults aim at, not the management interface.
//   NCCL_IB_HCA==mlx5_0,...       the lab's RDMA devices, when it has any.
// NCCL_IB_RESILIENCY_PORT_FAILOVER (NCCL >= 2.2x on multi-port HCAs) is not set: a job that
// wants it sets it in job.env (docs/scenarios.md).
//
// Timeouts: NCCL reports a dead IB path only after its retries are spent, so detection and
// give-up are both 4.096 us x 2^NCCL_IB_TIMEOUT x NCCL_IB_RETRY_CNT.
#pragma once

#include "ccl_under_test/api/ccl_plugin.h"

namespace fl::ccl::adapters {

const CclPlugin& NcclPlugin();

// 4.096 us x 2^ib_timeout x max(retry_cnt, 1): how long an IB QP retransmits before failing.
Nanos NcclIbGiveUp(int ib_timeout, int retry_cnt);

}  // namespace fl::ccl::adapters
