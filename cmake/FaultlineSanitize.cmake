# Sanitizers and fuzzing (the safety nets of docs/performance.md "Fuzzing (safety issue)").
#   FL_SANITIZE=address,undefined  every C/C++ object and link gets -fsanitize=<list>; undefined
#                                  behaviour aborts (-fno-sanitize-recover) instead of warning;
#                                  -O0 -gline-tables-only (after the build type's -O2 -g):
#                                  on 2 cores clang with ASan at -O1 took 2.4x as long per
#                                  file as at -O0 (34 s vs 14 s for harness/cli/suite_cmd.cc),
#                                  and the tests run under the sanitizers are short; line
#                                  tables keep the stacks readable. The collectives
#                                  (ccl_under_test/ and its tests) are the exception: they
#                                  reduce 64 MiB buffers element by element, and at -O0 under
#                                  ASan one of their tests outran its 300 s timeout, so those
#                                  directories call fl_sanitizer_hot_code() for -O1.
#   FL_FUZZ=ON                     builds the libFuzzer targets of tests/fuzz (clang only); our
#                                  code is then also compiled with -fsanitize=fuzzer-no-link so
#                                  that libFuzzer sees coverage inside the loaders, not just in
#                                  the fuzz target's own file (the unit tests still link: the
#                                  sanitizer runtime has no-op coverage callbacks).
# scripts/test.sh builds both in one extra directory (build-san) with clang.
set(FL_SANITIZE "" CACHE STRING "Sanitizers for every object and link, e.g. address,undefined")
option(FL_FUZZ "Build the libFuzzer targets in tests/fuzz (needs clang)" OFF)

set(FL_FUZZ_ENABLED OFF)
if(FL_FUZZ)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set(FL_FUZZ_ENABLED ON)
  else()
    message(WARNING "FL_FUZZ needs clang (CXX=clang++); ${CMAKE_CXX_COMPILER_ID} has no libFuzzer: "
                    "the fuzz targets are not built")
  endif()
endif()

set(_fl_san_compile)
if(FL_SANITIZE)
  list(APPEND _fl_san_compile -fsanitize=${FL_SANITIZE} -fno-omit-frame-pointer -O0 -gline-tables-only)
  if(FL_SANITIZE MATCHES "undefined")
    list(APPEND _fl_san_compile -fno-sanitize-recover=undefined)
  endif()
  add_link_options($<$<OR:$<LINK_LANGUAGE:CXX>,$<LINK_LANGUAGE:C>>:-fsanitize=${FL_SANITIZE}>)
endif()
if(FL_FUZZ_ENABLED)
  list(APPEND _fl_san_compile -fsanitize=fuzzer-no-link)
endif()
if(_fl_san_compile)
  # C and C++ only: nvcc would not take these (CUDA is off in a sanitizer build anyway).
  add_compile_options("$<$<OR:$<COMPILE_LANGUAGE:CXX>,$<COMPILE_LANGUAGE:C>>:${_fl_san_compile}>")
endif()

# -O1 for the code of this directory and below in a sanitizer build (after the -O0 above);
# in any build, tests defined here keep the build type's optimisation (fl_test: FL_HOT_CODE).
macro(fl_sanitizer_hot_code)
  set(FL_HOT_CODE ON)
  if(FL_SANITIZE)
    add_compile_options("$<$<OR:$<COMPILE_LANGUAGE:CXX>,$<COMPILE_LANGUAGE:C>>:-O1>")
  endif()
endmacro()
