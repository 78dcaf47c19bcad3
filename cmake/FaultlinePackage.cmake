# Debian packages (docs/operations.md, "Install"): `cmake --build build --target package`
# writes, into the build folder,
#   faultline        the coordinator CLI, the local lab's switch shim, configs, docs, man pages
#   faultline-agent  agent, worker (the fabric agent is `faultline-agent --host fabric`), the
#                    systemd unit, /etc/faultline/{agent.env,policy.yaml} as conffiles, the state
#                    directory /var/lib/faultline and the journal's /run/faultline (tmpfiles.d)
#   libftccl0        libftccl.so.0 (Debian names a library package by its soname)
#   libftccl-dev     headers, libftccl.so, ftccl.pc, ftccl-perf
# Dependencies come from dpkg-shlibdeps; the version from `git describe` at packaging time
# (cmake/deb/cpack_project_config.cmake). tests/package/install_test.sh installs them into a
# fresh Debian root file system and runs lintian.
include(GNUInstallDirs)
# Debian's multiarch library folder (/usr/lib/x86_64-linux-gnu), whatever the install prefix.
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(FL_LIBDIR lib/${CMAKE_LIBRARY_ARCHITECTURE})
else()
  set(FL_LIBDIR ${CMAKE_INSTALL_LIBDIR})
endif()

set(_fl_deb "${CMAKE_BINARY_DIR}/deb")
file(MAKE_DIRECTORY "${_fl_deb}")

# --- what goes where -------------------------------------------------------------------------
install(TARGETS faultline faultline-switch-shim RUNTIME DESTINATION bin COMPONENT coordinator)
install(TARGETS faultline-agent faultline-worker RUNTIME DESTINATION bin COMPONENT agent)
install(TARGETS ftccl LIBRARY DESTINATION ${FL_LIBDIR} COMPONENT lib
        NAMELINK_COMPONENT dev)
install(TARGETS ftccl-perf RUNTIME DESTINATION bin COMPONENT dev)

install(DIRECTORY "${CMAKE_SOURCE_DIR}/configs/" DESTINATION share/faultline/configs
        COMPONENT coordinator)
install(FILES "${CMAKE_SOURCE_DIR}/README.md" DESTINATION share/doc/faultline COMPONENT coordinator)
install(DIRECTORY "${CMAKE_SOURCE_DIR}/docs/" DESTINATION share/doc/faultline/docs
        COMPONENT coordinator)

# The headers a program using libftccl includes (they include the common/ ones they need);
# -I/usr/include/faultline, as in the source tree: #include "ccl_under_test/ftccl/ftccl.h".
foreach(_dir ccl_under_test/api ccl_under_test/ftccl common)
  install(DIRECTORY "${CMAKE_SOURCE_DIR}/${_dir}/" DESTINATION include/faultline/${_dir}
          COMPONENT dev FILES_MATCHING PATTERN "*.h")
endforeach()
configure_file("${CMAKE_SOURCE_DIR}/cmake/deb/ftccl.pc.in" "${_fl_deb}/ftccl.pc" @ONLY)
install(FILES "${_fl_deb}/ftccl.pc" DESTINATION ${FL_LIBDIR}/pkgconfig COMPONENT dev)

# The agent's unit with the packaged binary's path; its settings and policy as conffiles.
file(READ "${CMAKE_SOURCE_DIR}/configs/systemd/faultline-agent@.service" _fl_unit)
string(REPLACE "/usr/local/bin/" "/usr/bin/" _fl_unit "${_fl_unit}")
file(WRITE "${_fl_deb}/faultline-agent@.service" "${_fl_unit}")
install(FILES "${_fl_deb}/faultline-agent@.service" DESTINATION /lib/systemd/system COMPONENT agent)
file(READ "${CMAKE_SOURCE_DIR}/configs/systemd/agent.env.example" _fl_env)
string(REPLACE "/usr/local/bin/" "/usr/bin/" _fl_env "${_fl_env}")
file(WRITE "${_fl_deb}/agent.env" "${_fl_env}")
install(FILES "${_fl_deb}/agent.env" DESTINATION /etc/faultline COMPONENT agent
        PERMISSIONS OWNER_READ OWNER_WRITE)
install(FILES "${CMAKE_SOURCE_DIR}/configs/policies/inventory_host.yaml" DESTINATION /etc/faultline
        RENAME policy.yaml COMPONENT agent)
install(FILES "${CMAKE_SOURCE_DIR}/cmake/deb/faultline.tmpfiles" DESTINATION lib/tmpfiles.d
        RENAME faultline.conf COMPONENT agent)
install(DIRECTORY DESTINATION /var/lib/faultline COMPONENT agent
        DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)

# Per package: copyright, a changelog (written with the package's version at packaging time,
# gzip -9n as Debian policy wants) and man pages made from --help by help2man (at build time,
# when help2man is installed).
set(_fl_pkgs coordinator faultline agent faultline-agent lib libftccl0 dev libftccl-dev)
find_program(FL_GZIP gzip)
find_program(FL_HELP2MAN help2man)
while(_fl_pkgs)
  list(POP_FRONT _fl_pkgs _comp _pkg)
  install(FILES "${CMAKE_SOURCE_DIR}/cmake/deb/copyright" DESTINATION share/doc/${_pkg}
          COMPONENT ${_comp})
  install(FILES "${_fl_deb}/changelog.gz" DESTINATION share/doc/${_pkg} COMPONENT ${_comp})
endwhile()

set(_fl_man_pages)
if(FL_HELP2MAN AND FL_GZIP AND NOT FL_SANITIZE)
  foreach(_pair "faultline|coordinator|fault-injection and resilience test harness for GPU clusters"
                "faultline-agent|agent|faultline's agent on a host of a lab"
                "faultline-worker|agent|one rank of a faultline job"
                "ftccl-perf|dev|nccl-tests-style benchmark of ftccl")
    string(REPLACE "|" ";" _p "${_pair}")
    list(GET _p 0 _bin)
    list(GET _p 1 _comp)
    list(GET _p 2 _what)
    set(_man "${_fl_deb}/man/${_bin}.1")
    add_custom_command(OUTPUT "${_man}.gz"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${_fl_deb}/man"
      COMMAND ${FL_HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION}
              --name=${_what} --output=${_man} $<TARGET_FILE:${_bin}>
      COMMAND ${FL_GZIP} -9nf "${_man}"
      DEPENDS ${_bin} VERBATIM)
    list(APPEND _fl_man_pages "${_man}.gz")
    install(FILES "${_man}.gz" DESTINATION share/man/man1 COMPONENT ${_comp})
  endforeach()
  add_custom_target(fl_man_pages ALL DEPENDS ${_fl_man_pages})
endif()

# --- the packages --------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME faultline)
set(CPACK_PACKAGE_VENDOR "faultline")
# The Maintainer field and changelog signature: your team's address (-DFL_DEB_MAINTAINER=...);
# the default is a placeholder in the reserved .invalid domain.
set(FL_DEB_MAINTAINER "faultline developers <faultline@faultline.invalid>" CACHE STRING
    "Maintainer of the Debian packages: Name <address>")
set(CPACK_PACKAGE_CONTACT "${FL_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL coordinator agent lib dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_PROJECT_CONFIG_FILE "${CMAKE_SOURCE_DIR}/cmake/deb/cpack_project_config.cmake")
# Read at packaging time by cmake/deb/cpack_project_config.cmake (CPack keeps CPACK_* only).
set(CPACK_FL_SOURCE_DIR "${CMAKE_SOURCE_DIR}")
set(CPACK_FL_BASE_VERSION "${PROJECT_VERSION}")
set(CPACK_FL_DEB_DIR "${_fl_deb}")

set(CPACK_DEBIAN_COORDINATOR_PACKAGE_NAME faultline)
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_RECOMMENDS "faultline-agent, nftables, openssh-client")
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_DEPENDS "iproute2")
set(CPACK_COMPONENT_COORDINATOR_DESCRIPTION
    "fault-injection and resilience test harness for GPU clusters\nfaultline drives a multi-node GPU training job while injectors flap NIC\nports, take ToR links down, trigger PFC pause storms and kill containers,\nand turns recovery latency, throughput loss and correctness into verdicts\nand reports. This package holds the coordinator (the faultline command), the\nshipped scenarios, suites and labs, and the documentation. Hosts of a lab\nalso need faultline-agent.")
set(CPACK_DEBIAN_AGENT_PACKAGE_NAME faultline-agent)
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS "iproute2")
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS "nftables, ethtool, lldpd")
set(CPACK_COMPONENT_AGENT_DESCRIPTION
    "faultline's agent for the hosts of a lab\nThe agent applies and reverts the faults the faultline coordinator asks for,\nunder a local policy (/etc/faultline/policy.yaml), starts the job's ranks\n(faultline-worker) and relays their telemetry. It runs as the systemd unit\nfaultline-agent@HOST; its fault journal in /run/faultline lets any fault it\napplied be reverted after a crash.")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA
    "${CMAKE_SOURCE_DIR}/cmake/deb/agent/conffiles;${CMAKE_SOURCE_DIR}/cmake/deb/agent/postinst;${CMAKE_SOURCE_DIR}/cmake/deb/agent/prerm;${CMAKE_SOURCE_DIR}/cmake/deb/agent/postrm")
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libftccl0)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
# shlibs for libftccl.so.0 (packages built against it depend on this version exactly: no
# ABI promise yet) and the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA "${CMAKE_SOURCE_DIR}/cmake/deb/lib/triggers")
set(CPACK_COMPONENT_LIB_DESCRIPTION
    "ftccl, faultline's fault-tolerant collective library\nftccl runs AllReduce, AllGather, ReduceScatter, Broadcast and AllToAll over\nevery NIC of a host, with every message sequenced and acknowledged: a NIC or\nlink that fails is detected in milliseconds and its traffic moves to the\nsurviving paths, results exact.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libftccl-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "ftccl, faultline's fault-tolerant collective library (development files)\nHeaders, the pkg-config file ftccl.pc and ftccl-perf, a benchmark that\nspeaks nccl-tests' options, output and exit codes.")
include(CPack)
