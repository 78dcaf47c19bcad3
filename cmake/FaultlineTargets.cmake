# Helpers that keep every folder's CMakeLists.txt short.

# Unity builds (CMAKE_UNITY_BUILD, on by default: CMakeLists.txt) compile a target's
# files in batches, one translation unit each. A file that includes a <linux/...> UAPI header
# cannot share one with files that include glibc's <net/if.h> or <netinet/tcp.h> (they define
# the same structs), so such a file is compiled on its own. Test files are never batched: they
# reuse names (kT0, FakeComm, Make, TempDir) in their anonymous namespaces.
function(fl_unity_guard name)
  if(NOT CMAKE_UNITY_BUILD)
    return()
  endif()
  # A batch includes each of its .cc files, and g++ then warns of a class that uses a type of
  # that file's anonymous namespace (-Wsubobject-linkage): a risk only for a header that many
  # translation units include, and test files (never batched) still get the warning for those.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-subobject-linkage>)
  endif()
  get_target_property(_srcs ${name} SOURCES)
  foreach(_s ${_srcs})
    get_filename_component(_abs "${_s}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(EXISTS "${_abs}")
      file(STRINGS "${_abs}" _uapi REGEX "^#include <linux/")
      if(_uapi)
        set_source_files_properties(${_s} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
      endif()
    endif()
  endforeach()
endfunction()

# fl_library(NAME SOURCES... [DEPS ...]): a static library of faultline's own code.
function(fl_library name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${A_SOURCES} ${A_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PUBLIC fl_build_flags ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
  fl_unity_guard(${name})
endfunction()

# fl_binary(NAME SOURCES... [DEPS ...]): an executable placed in build/bin.
function(fl_binary name)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${A_SOURCES} ${A_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE fl_build_flags ${A_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/bin")
  fl_unity_guard(${name})
endfunction()

# One ctest group of a test binary: the test cases TEST_SPEC selects, named NAME:LABEL:case,
# labelled LABEL, alone on the machine when SERIAL. Registered only when the sources' TEXT
# spells NEED (and NEED2 unless empty).
function(_fl_discover name text timeout spec label serial need need2)
  string(FIND "${text}" "${need}" _at)
  if(_at EQUAL -1)
    return()
  endif()
  if(NOT need2 STREQUAL "")
    string(FIND "${text}" "${need2}" _at)
    if(_at EQUAL -1)
      return()
    endif()
  endif()
  set(_serial "")
  if(serial)
    set(_serial RUN_SERIAL TRUE)
  endif()
  catch_discover_tests(${name} TEST_SPEC "${spec}" TEST_PREFIX "${name}:${label}:"
                       EXTRA_ARGS -w NoTests PROPERTIES TIMEOUT ${timeout} LABELS "${label}"
                       ${_serial})
endfunction()

# fl_test(NAME SOURCES... [HIDDEN_SOURCES...] DEPS ...): one Catch2 binary per source folder.
# Tests tagged [.root] are registered separately with the ctest label "root" (run when the
# suite runs as root); tests tagged [.gpu] / [.rdma] are registered with those labels.
# HIDDEN_SOURCES: files whose every test case carries one of those hidden tags. A sanitizer
# build (FL_SANITIZE) runs only the unit and fuzz labels, so it leaves them out (a third of
# its test compile time); configure checks that each has no test case without such a tag.
# Test code is compiled at -Og in RelWithDebInfo (5.3 s instead of 8.2 s for a typical test
# file with g++: tests/reports/metrics_test.cc), except in directories that call
# fl_sanitizer_hot_code() (compute-heavy test code keeps the build type's -O2).
function(fl_test name)
  cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;HIDDEN_SOURCES;DEPS" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  foreach(_src ${A_HIDDEN_SOURCES})
    file(READ "${CMAKE_CURRENT_SOURCE_DIR}/${_src}" _text)
    string(REGEX MATCHALL "(TEST_CASE|TEST_CASE_METHOD|SCENARIO)[ \t\r\n]*\\(" _cases "${_text}")
    string(REGEX MATCHALL "\\[\\.(root|gpu|rdma)\\]" _hidden "${_text}")
    list(LENGTH _cases _n_cases)
    list(LENGTH _hidden _n_hidden)
    if(_n_hidden LESS _n_cases)
      message(FATAL_ERROR "${CMAKE_CURRENT_SOURCE_DIR}/${_src}: ${_n_cases} test cases but "
                          "${_n_hidden} [.root]/[.gpu]/[.rdma] tags: a file with unit tests "
                          "belongs under SOURCES of fl_test(${name})")
    endif()
  endforeach()
  set(_sources ${A_SOURCES} ${A_UNPARSED_ARGUMENTS})
  # A ';' in a test name splits its ctest entry into names that match nothing (CMake's list
  # separator): refused here, naming the file, instead of failing at test time.
  foreach(_src ${_sources} ${A_HIDDEN_SOURCES})
    if(_src MATCHES "_test\\.cc$" AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/${_src}")
      file(READ "${CMAKE_CURRENT_SOURCE_DIR}/${_src}" _text)
      string(REGEX MATCH "TEST_CASE[ \t\r\n]*\\([ \t\r\n]*\"([^\"]|\"[ \t\r\n]*\")*;" _semi "${_text}")
      if(_semi)
        message(FATAL_ERROR "${CMAKE_CURRENT_SOURCE_DIR}/${_src}: a test name with ';' (CMake "
                            "splits its ctest entry there and neither half matches a test)")
      endif()
    endif()
  endforeach()
  if(NOT FL_SANITIZE)
    list(APPEND _sources ${A_HIDDEN_SOURCES})
  endif()
  add_executable(${name} ${_sources})
  target_link_libraries(${name} PRIVATE fl_build_flags fl_test_main ${A_DEPS})
  if(NOT FL_HOT_CODE AND NOT FL_SANITIZE)
    target_compile_options(${name} PRIVATE
                           $<$<AND:$<CONFIG:RelWithDebInfo>,$<COMPILE_LANGUAGE:CXX>>:-Og>)
  endif()
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests"
                                           UNITY_BUILD OFF)
  set_property(GLOBAL APPEND PROPERTY FL_TEST_TARGETS ${name})  # for the fl_tests target
  # "-w NoTests": a ctest entry whose filter matches no test case fails instead of passing
  # silently (test names must not contain ';', which CMake splits lists on).
  catch_discover_tests(${name} TEST_PREFIX "${name}:" EXTRA_ARGS -w NoTests
                       PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "unit")
  # Only the groups whose tag some source spells are registered: Catch2's discovery warns
  # "contains no tests" for an empty one, 64 times a build. A tag a source spells is enough:
  # an empty group costs that warning, a missing one would lose tests, so err towards it.
  set(_all_text "")
  foreach(_src ${_sources})
    if(_src MATCHES "\\.(cc|h)$" AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/${_src}")
      file(READ "${CMAKE_CURRENT_SOURCE_DIR}/${_src}" _text)
      string(APPEND _all_text "${_text}")
    endif()
  endforeach()
  # Root tests bring up labs of their own (namespaces and cgroups under the lab's own prefix,
  # their own state directory, kernel-chosen ports: docs/lab.md), so two run at once. One
  # tagged [serial] runs alone: it measures time against a bound that a neighbour's load
  # could break, or it needs the whole machine. GPU and RDMA tests always run alone.
  _fl_discover(${name} "${_all_text}" ${A_TIMEOUT} "[.root]~[serial]" root "" "[.root]" "")
  _fl_discover(${name} "${_all_text}" ${A_TIMEOUT} "[.root][serial]" root TRUE "[.root]"
               "[serial]")
  foreach(tag gpu rdma)
    _fl_discover(${name} "${_all_text}" ${A_TIMEOUT} "[.${tag}]" ${tag} TRUE "[.${tag}]" "")
  endforeach()
endfunction()
