# Installation (`cmake --install build --prefix P`), the consumers' entry
# points (find_package(Attn) with Attn::attnrt, attnrt.pc) and the Debian
# packages (`cpack -G DEB` in the build directory): attn-runtime holds
# libattnrt, its headers and both entry points; attn the tools and the docs.
# docs/install.md explains each.
include(CMakePackageConfigHelpers)

set(ATTN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Attn)

# libattnrt and its public headers (the generated version.h among them).
install(TARGETS attnrt EXPORT AttnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
          NAMELINK_COMPONENT runtime)
install(FILES
    ${PROJECT_SOURCE_DIR}/runtime/include/attnrt/attnrt.h
    ${PROJECT_SOURCE_DIR}/runtime/include/attnrt/model_abi.h
    ${PROJECT_BINARY_DIR}/runtime/include/attnrt/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnrt COMPONENT runtime)

# find_package(Attn 0.2): Attn::attnrt. Before 1.0 a minor release may
# change the API, so only the same major.minor is compatible.
install(EXPORT AttnTargets NAMESPACE Attn:: DESTINATION ${ATTN_CMAKE_DIR}
  COMPONENT runtime)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/AttnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/AttnConfig.cmake INSTALL_DESTINATION ${ATTN_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/AttnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/AttnConfig.cmake
              ${PROJECT_BINARY_DIR}/AttnConfigVersion.cmake
  DESTINATION ${ATTN_CMAKE_DIR} COMPONENT runtime)

# pkg-config: paths relative to the .pc file, so the installed tree may move.
string(REGEX REPLACE "[^/]+" ".." ATTN_PC_TO_PREFIX "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(${PROJECT_SOURCE_DIR}/cmake/attnrt.pc.in
  ${PROJECT_BINARY_DIR}/attnrt.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/attnrt.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT runtime)

# The tools. They find libattnrt next to them ($ORIGIN/../lib), and the
# compiler side finds libMLIR/libLLVM (and attn-bench libomp) where Debian
# keeps them. attn-run finds attn-compile next to itself.
set(ATTN_RUNTIME_TOOLS attn-run attn-tokenize attn-perplexity attn-inspect attn-serve)
set(ATTN_LLVM_TOOLS attn-compile attn-opt attn-make-model attn-bench)
set(ATTN_TOOLS ${ATTN_LLVM_TOOLS} ${ATTN_RUNTIME_TOOLS})
foreach(tool ${ATTN_RUNTIME_TOOLS})
  set_target_properties(${tool} PROPERTIES
    INSTALL_RPATH "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endforeach()
foreach(tool ${ATTN_LLVM_TOOLS})
  set_target_properties(${tool} PROPERTIES
    INSTALL_RPATH "\$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${LLVM_LIBRARY_DIR}")
endforeach()
install(TARGETS ${ATTN_TOOLS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  COMPONENT tools)

# The docs: the hand-written pages, their examples, and the reference pages
# generated from ODS (attn-doc).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT tools
  FILES_MATCHING PATTERN "*.md" PATTERN "*.mlir" PATTERN "*.json")
install(DIRECTORY ${PROJECT_BINARY_DIR}/docs/Dialects ${PROJECT_BINARY_DIR}/docs/Passes
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/generated COMPONENT tools
  FILES_MATCHING PATTERN "*.md")

# What Debian asks of every package (lintian): a copyright file and a
# changelog, compressed as dpkg expects, in each package's doc folder; the
# runtime activates the ldconfig trigger; and the one RUNPATH the tools
# cannot avoid (libMLIR lives only in LLVM's folder) is declared.
set(ATTN_GIT_COMMIT_OR_NONE "${ATTN_GIT_COMMIT}")
if(NOT ATTN_GIT_COMMIT_OR_NONE)
  set(ATTN_GIT_COMMIT_OR_NONE "(not built from a checkout)")
endif()
string(TIMESTAMP ATTN_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/copyright.in
  ${PROJECT_BINARY_DIR}/debian/copyright @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/changelog.in
  ${PROJECT_BINARY_DIR}/debian/changelog @ONLY)
execute_process(COMMAND gzip -9nf ${PROJECT_BINARY_DIR}/debian/changelog)
foreach(package_component attn-runtime:runtime attn:tools)
  string(REPLACE ":" ";" pair ${package_component})
  list(GET pair 0 package)
  list(GET pair 1 component)
  install(FILES ${PROJECT_BINARY_DIR}/debian/copyright
                ${PROJECT_BINARY_DIR}/debian/changelog.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian/attn.lintian-overrides
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME attn
  COMPONENT tools)

# Debian packages. Depends are computed by dpkg-shlibdeps from the ELF
# files (libc, the C++ runtime, PCRE2, utf8proc; libMLIR/libLLVM for the tools), plus
# what no ELF file names: attn links a compiled model with a C compiler
# driver and libomp, and needs the runtime of its own version.
set(CPACK_PACKAGE_NAME attn)
set(CPACK_PACKAGE_VENDOR "Attn")
set(CPACK_PACKAGE_CONTACT "Attn developers <attn@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Compile-time graph compiler for transformer inference on CPUs")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_STRIP_FILES ON)
# libattnrt is found in the runtime package being built, not on the system.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/lib)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME attn-runtime)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
  "Attn runtime: loads models compiled by attn-compile and generates text\n libattnrt, its C headers, a CMake package (find_package(Attn)) and attnrt.pc.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/debian/triggers)
# A compiled model loads libomp.so.5 (through LLVM 22's lib folder): the
# runtime recommends the package that owns the file it resolves to here.
get_filename_component(ATTN_LIBOMP "${LLVM_LIBRARY_DIR}/libomp.so.5" REALPATH)
find_program(ATTN_DPKG dpkg)
if(ATTN_DPKG AND EXISTS "${ATTN_LIBOMP}")
  execute_process(COMMAND ${ATTN_DPKG} -S "${ATTN_LIBOMP}"
    OUTPUT_VARIABLE attn_libomp_owner ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(REGEX REPLACE "[:,].*" "" attn_libomp_package "${attn_libomp_owner}")
  if(attn_libomp_package)
    set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "${attn_libomp_package}")
  endif()
endif()
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME attn)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
  "Attn tools: attn-compile, attn-run, attn-perplexity, attn-opt and more\n Compiles Hugging Face model folders to native libraries and runs them.")
set(ATTN_TOOLS_DEPENDS "attn-runtime (= ${PROJECT_VERSION}), clang-22, libomp-22-dev")
# The tools' RUNPATH reaches libLLVM through LLVM 22's lib folder, where it
# is a symlink of llvm-22-dev (a package without shlibs), so dpkg-shlibdeps
# cannot name its package: name the owner of the file it points to.
if(ATTN_DPKG)
  set(attn_llvm_library
    "${LLVM_LIBRARY_DIR}/libLLVM.so.${LLVM_VERSION_MAJOR}.${LLVM_VERSION_MINOR}")
  get_filename_component(attn_llvm_real "${attn_llvm_library}" REALPATH)
  if(IS_SYMLINK "${attn_llvm_library}" AND EXISTS "${attn_llvm_real}")
    execute_process(COMMAND ${ATTN_DPKG} -S "${attn_llvm_real}"
      OUTPUT_VARIABLE attn_llvm_owner ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    string(REGEX REPLACE "[:,].*" "" attn_llvm_package "${attn_llvm_owner}")
    if(attn_llvm_package)
      execute_process(COMMAND dpkg-query -W "-f=\${Version}" ${attn_llvm_package}
        OUTPUT_VARIABLE attn_llvm_version ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
      string(REGEX REPLACE "-[^-]*$" "" attn_llvm_version "${attn_llvm_version}")
      string(APPEND ATTN_TOOLS_DEPENDS ", ${attn_llvm_package} (>= ${attn_llvm_version})")
    endif()
  endif()
endif()
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${ATTN_TOOLS_DEPENDS}")
include(CPack)
