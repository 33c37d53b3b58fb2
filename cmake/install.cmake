# ember — what `cmake --install` puts under the prefix, and the .deb CPack
# makes of it (issue 11, part 6). Included once, at the end of the top-level
# CMakeLists.txt, after every target exists:
#
#   include/ember.h                       the public C API (the only public header)
#   lib/libember.a                        the runtime (C++; hosts link libstdc++)
#   lib/cmake/ember/ember-config.cmake    find_package(ember) -> ember::ember
#   lib/cmake/ember/ember-targets*.cmake
#   lib/cmake/ember/ember-config-version.cmake
#   lib/pkgconfig/ember.pc                pkg-config --static --cflags --libs ember
#   bin/ember                             the CLI
#
# ("lib" is CMAKE_INSTALL_LIBDIR.) The installed files name no build or
# source directory: the CMake package finds its prefix from its own
# location, finds Threads and mbedTLS's libmbedcrypto on the host, and
# ember.pc is written at install time with the prefix being installed to.
# tools/scripts/package_test.sh builds examples/host against it both ways.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(EMBER_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ember)

# --- ember's usage requirements, as a host outside this build sees them ----------
# The `ember` target is declared for this build: its include folder and its
# mbedcrypto archive are absolute paths, it may link this build's own
# (OBJECT) libraries, and it carries definitions only the tools read
# (EMBER_VERSION_STRING, EMBER_BUILD_FLAVOR, EMBER_VULKAN). The exported
# target must carry none of that. So every entry of its INTERFACE_*
# properties is kept for the build tree, wrapped in $<BUILD_INTERFACE:...>
# (ember_internal, the tools and the tests see no change), and the install
# tree gets exactly this, in $<INSTALL_INTERFACE:...>:
#   includes     include/
#   links        ember::mbedcrypto (an imported target ember-config.cmake
#                makes from the host's libmbedcrypto), Threads::Threads,
#                libdl when the Vulkan backend (which dlopens libvulkan) is
#                built, and ember::xnnpack (the host's libXNNPACK.so) when
#                the XNNPACK provider is. The objects of any layer library are
#                inside libember.a already.
#   definitions  none (ember.h needs none)
# Doing it here, rather than where `ember` is declared, keeps this file the
# only one that knows about installing, whatever the target links.
function(ember_build_interface_only prop)
  get_target_property(items ember ${prop})
  if(NOT items AND NOT ARGN)
    return()
  endif()
  set(result "")
  if(items)
    foreach(item IN LISTS items)
      if(item MATCHES "^\\$<(BUILD|INSTALL)_INTERFACE:")
        list(APPEND result "${item}")                      # already split
      else()
        list(APPEND result "$<BUILD_INTERFACE:${item}>")
      endif()
    endforeach()
  endif()
  list(APPEND result ${ARGN})
  set_property(TARGET ember PROPERTY ${prop} "${result}")
endfunction()

get_target_property(_ember_type ember TYPE)
if(NOT _ember_type STREQUAL "STATIC_LIBRARY")
  message(FATAL_ERROR "cmake/install.cmake: `ember` must be the one static archive (libember.a), "
                      "found ${_ember_type}")
endif()
set(_ember_install_links ember::mbedcrypto Threads::Threads)
if(EMBER_VULKAN AND CMAKE_DL_LIBS)
  list(APPEND _ember_install_links ${CMAKE_DL_LIBS})
endif()
# The XNNPACK provider (EMBER_HAVE_XNNPACK): the host's libXNNPACK.so,
# found by ember-config.cmake as ember::xnnpack.
if(EMBER_HAVE_XNNPACK)
  list(APPEND _ember_install_links ember::xnnpack)
endif()
list(TRANSFORM _ember_install_links REPLACE "^(.+)$" "$<INSTALL_INTERFACE:\\1>")
ember_build_interface_only(INTERFACE_INCLUDE_DIRECTORIES "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
ember_build_interface_only(INTERFACE_LINK_LIBRARIES ${_ember_install_links})
ember_build_interface_only(INTERFACE_COMPILE_DEFINITIONS)

# --- files ----------------------------------------------------------------------
install(TARGETS ember EXPORT ember-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/runtime/include/ember.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ember_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})   # bin/ember

# --- the CMake package ------------------------------------------------------------
install(EXPORT ember-targets NAMESPACE ember:: FILE ember-targets.cmake
  DESTINATION ${EMBER_CMAKE_INSTALL_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ember-config.cmake.in
  ${CMAKE_BINARY_DIR}/package/ember-config.cmake
  INSTALL_DESTINATION ${EMBER_CMAKE_INSTALL_DIR})
# 0.x: only the same minor version is compatible (the API may still change).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/ember-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/ember-config.cmake
              ${CMAKE_BINARY_DIR}/package/ember-config-version.cmake
  DESTINATION ${EMBER_CMAKE_INSTALL_DIR})

# --- ember.pc ---------------------------------------------------------------------
# Written at install time, so prefix= is the prefix really installed to
# (`cmake --install build --prefix P`, or /usr inside the .deb), not the
# one configured. Libs.private is what a static link of libember.a needs
# (pkg-config --static): mbedTLS's crypto, threads, libdl with Vulkan, and
# the C++ runtime, since a C host's link does not add it.
set(EMBER_PC_LIBS_PRIVATE "-lmbedcrypto")
if(CMAKE_THREAD_LIBS_INIT)
  string(APPEND EMBER_PC_LIBS_PRIVATE " ${CMAKE_THREAD_LIBS_INIT}")
else()
  # Threads are in glibc's libc since 2.34; -lpthread still names them for
  # an older C library (from 2.34 libpthread.a is an empty stub).
  string(APPEND EMBER_PC_LIBS_PRIVATE " -lpthread")
endif()
if(EMBER_VULKAN AND CMAKE_DL_LIBS)
  string(APPEND EMBER_PC_LIBS_PRIVATE " -l${CMAKE_DL_LIBS}")
endif()
if(EMBER_HAVE_XNNPACK)
  string(APPEND EMBER_PC_LIBS_PRIVATE " -lXNNPACK")
endif()
string(APPEND EMBER_PC_LIBS_PRIVATE " -lstdc++ -lm")
set(EMBER_PC_PREFIX "@EMBER_PC_PREFIX@")   # kept for the install-time pass
configure_file(${CMAKE_CURRENT_LIST_DIR}/ember.pc.in ${CMAKE_BINARY_DIR}/package/ember.pc.in @ONLY)
install(CODE "
  set(EMBER_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${CMAKE_BINARY_DIR}/package/ember.pc.in\" \"${CMAKE_BINARY_DIR}/package/install/ember.pc\" @ONLY)
  file(INSTALL \"${CMAKE_BINARY_DIR}/package/install/ember.pc\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")
")

# --- the .deb (cpack -G DEB in the build folder) ---------------------------------
# One package: the static library, the header, the CMake and pkg-config
# files, and the CLI. Depends: what bin/ember loads (dpkg-shlibdeps finds
# libc6, libstdc++6, libgcc-s1; mbedcrypto is linked in statically).
# Linking libember.a into a host also needs libmbedtls-dev, which is
# recommended rather than required, so the CLI installs alone;
# find_package(ember) says so when it is missing. libvulkan1 is suggested:
# the Vulkan backend dlopens it at run time.
set(CPACK_PACKAGE_NAME ember)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "ember")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "LLM inference runtime for edge hardware (static library, C API, CLI)")
set(CPACK_PACKAGE_DESCRIPTION
  "libember.a and ember.h, a C API to run llama-family models from verified, memory-mapped .ember files; a CMake package (find_package(ember)) and ember.pc; and the ember command (convert, plan, run, sign, verify).")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "ember maintainers <maintainers@users.noreply.a-seed-12d6af12.example>")
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libmbedtls-dev")
if(EMBER_HAVE_XNNPACK)
  # bin/ember loads libXNNPACK.so.0 (dpkg-shlibdeps adds libxnnpack0);
  # linking libember.a needs its -dev package too.
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libmbedtls-dev, libxnnpack-dev")
endif()
if(EMBER_VULKAN)
  set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libvulkan1")
endif()
find_program(EMBER_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(EMBER_DPKG_SHLIBDEPS AND NOT CMAKE_CROSSCOMPILING AND NOT EMBER_STATIC)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
elseif(NOT EMBER_STATIC)
  # Without dpkg-shlibdeps (or for another architecture): what a dynamic
  # bin/ember needs on Debian bookworm.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libstdc++6 (>= 12), libgcc-s1")
  if(EMBER_HAVE_XNNPACK)
    string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libxnnpack0")
  endif()
endif()
if(CMAKE_CROSSCOMPILING)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^arm")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE armhf)
  endif()
endif()
include(CPack)
