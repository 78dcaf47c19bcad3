// The built-in workloads: one line each, FL_WORKLOAD(name, descriptor, class). The descriptor
// (name, doc, options: workload_plugins.cc) is what the coordinator sees without the
// workload's code; the class (workloads.cc) is what the rank runs. workload_plugins.cc reads
// this list for WorkloadPlugins(), workloads.cc for RegisterBuiltinWorkloads(), so adding a
// workload is its class, its descriptor and one line here. No include guard: each reader
// defines FL_WORKLOAD, includes this file and undefines it. In name order.
FL_WORKLOAD(allreduce_loop, kAllReduceLoopPlugin, AllReduceLoop)
FL_WORKLOAD(moe_alltoall, kMoeAllToAllPlugin, MoeAllToAll)
FL_WORKLOAD(training_step, kTrainingStepPlugin, TrainingStep)
