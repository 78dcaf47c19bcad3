# The CCLs: one line each, the only place a CCL is registered. Both lists are generated from it
# (ccl_under_test/tools/CMakeLists.txt):
#   fl_ccl_plugins   every descriptor (ccl_plugins.h), light: the coordinator links it;
#   fl_ccl_builtin   the factory of every CCL whose engine library this build has
#                    (RegisterBuiltinCcls, ccl_builtin.h); an engine that is not built (gloo
#                    without Gloo, nccl without nccl.h) is left out, its descriptor stays.
#
# fl_ccl(NAME PLUGIN_LIB PLUGIN_HEADER DESCRIPTOR ENGINE_LIB ENGINE_HEADER REGISTER)
#   NAME         the registry name (job.ccl, --ccl); the descriptor's name
#   PLUGIN_LIB   the descriptor's library (links fl_common only); PLUGIN_HEADER declares
#                DESCRIPTOR, a `const CclPlugin& ()`
#   ENGINE_LIB   the engine's library (may be absent from a build); ENGINE_HEADER declares
#                REGISTER, a `Status (CclRegistry&)` that registers NAME with the descriptor's
#                schema
fl_ccl(ftccl fl_ftccl_plugin ccl_under_test/ftccl/ftccl_plugin.h fl::ccl::ftccl::FtcclPlugin fl_ftccl ccl_under_test/ftccl/ftccl.h fl::ccl::ftccl::RegisterFtccl)
fl_ccl(gloo fl_gloo_plugin ccl_under_test/adapters/gloo/gloo_plugin.h fl::ccl::adapters::GlooPlugin fl_adapter_gloo ccl_under_test/adapters/gloo/gloo_communicator.h fl::ccl::adapters::RegisterGloo)
fl_ccl(nccl fl_nccl_plugin ccl_under_test/adapters/nccl/nccl_plugin.h fl::ccl::adapters::NcclPlugin fl_adapter_nccl ccl_under_test/adapters/nccl/nccl_communicator.h fl::ccl::adapters::RegisterNccl)
