# Read by cpack for every package it makes (CPACK_PROJECT_CONFIG_FILE): the version from
# `git describe` now, not at configure time, and the changelog that carries it.
#   tagged vX.Y.Z          -> X.Y.Z
#   N commits after it     -> X.Y.Z+gitN.HASH
#   no tag                 -> <project version>+gitCOUNT.HASH
# A tree with uncommitted changes gets ".dirty".
set(_v "${CPACK_FL_BASE_VERSION}")
find_program(_git git)
if(_git AND EXISTS "${CPACK_FL_SOURCE_DIR}/.git")
  execute_process(COMMAND "${_git}" -C "${CPACK_FL_SOURCE_DIR}" describe --tags --long --dirty
                          --match "v[0-9]*" --abbrev=12
                  OUTPUT_VARIABLE _d OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _d MATCHES "^v([0-9][0-9.]*)-([0-9]+)-g([0-9a-f]+)(-dirty)?$")
    set(_v "${CMAKE_MATCH_1}")
    if(NOT CMAKE_MATCH_2 EQUAL 0)
      set(_v "${_v}+git${CMAKE_MATCH_2}.${CMAKE_MATCH_3}")
    endif()
    if(CMAKE_MATCH_4)
      set(_v "${_v}.dirty")
    endif()
  else()
    execute_process(COMMAND "${_git}" -C "${CPACK_FL_SOURCE_DIR}" rev-list --count HEAD
                    OUTPUT_VARIABLE _n OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND "${_git}" -C "${CPACK_FL_SOURCE_DIR}" describe --always --dirty
                            --abbrev=12
                    OUTPUT_VARIABLE _h OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    string(REPLACE "-dirty" ".dirty" _h "${_h}")
    if(_n AND _h)
      set(_v "${_v}+git${_n}.${_h}")
    endif()
  endif()
endif()
set(CPACK_PACKAGE_VERSION "${_v}")
set(CPACK_DEBIAN_PACKAGE_VERSION "${_v}")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libftccl0 (= ${_v}), nlohmann-json3-dev, libyaml-cpp-dev")

# A native package's changelog: one entry, this version (lintian reads it).
string(TIMESTAMP _date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE "${CPACK_FL_DEB_DIR}/changelog"
  "faultline (${_v}) unstable; urgency=medium\n\n"
  "  * Built from the faultline source tree (git describe: ${_d}${_h}).\n\n"
  " -- ${CPACK_PACKAGE_CONTACT}  ${_date}\n")
find_program(_gzip gzip REQUIRED)
execute_process(COMMAND "${_gzip}" -9nkf "${CPACK_FL_DEB_DIR}/changelog")
