# Finds faultline's dependencies. Required ones stop configure with a clear message; optional
# ones set FL_HAVE_<X>.

find_program(FL_CCACHE ccache)
if(FL_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER "${FL_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${FL_CCACHE}")
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${FL_CCACHE}")
endif()

find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)

# --- required -----------------------------------------------------------------------------
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_program(FL_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(Boost 1.74 REQUIRED)  # headers only: Asio
find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)  # NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE
find_package(spdlog REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
if(FL_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
endif()

# libibverbs: linked always; code copes with ibv_get_device_list() returning NULL (no device).
pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
if(NOT IBVERBS_FOUND)
  find_library(IBVERBS_LIB ibverbs)
  find_path(IBVERBS_INCLUDE infiniband/verbs.h)
  if(NOT IBVERBS_LIB OR NOT IBVERBS_INCLUDE)
    message(FATAL_ERROR "libibverbs not found: install libibverbs-dev (scripts/setup.sh does)")
  endif()
  add_library(fl_ibverbs INTERFACE)
  target_link_libraries(fl_ibverbs INTERFACE "${IBVERBS_LIB}")
  target_include_directories(fl_ibverbs SYSTEM INTERFACE "${IBVERBS_INCLUDE}")
else()
  add_library(fl_ibverbs INTERFACE)
  target_link_libraries(fl_ibverbs INTERFACE PkgConfig::IBVERBS)
endif()

pkg_check_modules(MNL IMPORTED_TARGET libmnl)
pkg_check_modules(NFTABLES IMPORTED_TARGET libnftables)

# --- optional -----------------------------------------------------------------------------
set(FL_HAVE_CUDA OFF)
if(FL_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)  # A100, H100/H200; never "native": no GPU at build time
    endif()
    # CMake 3.25 does not know nvcc 13's C++20 flag; the kernels need only C++17.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(FL_HAVE_CUDA ON)
  endif()
endif()

set(FL_HAVE_NCCL OFF)
if(FL_WITH_NCCL)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS /usr/local/cuda/include ${CUDAToolkit_INCLUDE_DIRS})
  if(NCCL_INCLUDE_DIR)
    set(FL_HAVE_NCCL ON)  # libnccl itself is loaded at run time (dlopen), not linked
  endif()
endif()

set(FL_HAVE_GLOO OFF)
if(FL_WITH_GLOO)
  find_package(Gloo CONFIG QUIET)
  if(TARGET gloo)
    set(FL_HAVE_GLOO ON)
  endif()
endif()
