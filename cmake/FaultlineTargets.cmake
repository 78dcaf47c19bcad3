# Helpers that keep every folder's CMakeLists.txt short.

# fl_library(NAME SOURCES... [DEPS ...]): a static library of faultline's own code.
function(fl_library name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SOURCES} ${A_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PUBLIC fl_build_flags ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
endfunction()

# fl_binary(NAME SOURCES... [DEPS ...]): an executable placed in build/bin.
function(fl_binary name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${A_SOURCES} ${A_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE fl_build_flags ${A_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bin")
endfunction()

# fl_test(NAME SOURCES... DEPS ...): one Catch2 binary per source folder. Tests tagged [.root]
# are registered separately with the ctest label "root" (run when the suite runs as root);
# tests tagged [.gpu] / [.rdma] are registered with those labels.
function(fl_test name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;DEPS" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  add_executable(${name} ${A_SOURCES} ${A_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE fl_build_flags fl_test_main ${A_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")
  set_property(GLOBAL APPEND PROPERTY FL_TEST_TARGETS ${name})  # for the fl_tests target
  # "-w NoTests": a ctest entry whose filter matches no test case fails instead of passing
  # silently (test names must not contain ';', which CMake splits lists on).
  catch_discover_tests(${name} TEST_PREFIX "${name}:" EXTRA_ARGS -w NoTests
                       PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "unit")
  foreach(tag root gpu rdma)
    catch_discover_tests(${name} TEST_SPEC "[.${tag}]" TEST_PREFIX "${name}:${tag}:" EXTRA_ARGS -w NoTests
                         PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "${tag}" RUN_SERIAL TRUE)
  endforeach()
endfunction()
