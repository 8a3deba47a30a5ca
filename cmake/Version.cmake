# The version of Attn is project(VERSION), its one source. This adds the git
# commit of a checkout and writes both, with the LLVM/MLIR version, into the
# generated headers the tools and the runtime read:
#   build/include/attn/Support/VersionInfo.h  (tools, attn-compile's manifest)
#   build/runtime/include/attnrt/version.h    (public: the runtime's version)
set(ATTN_GIT_COMMIT "")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(
    COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    OUTPUT_VARIABLE ATTN_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE attn_git_result ERROR_QUIET)
  if(NOT attn_git_result EQUAL 0)
    set(ATTN_GIT_COMMIT "")
  endif()
  # A new commit or checkout re-runs the configure step, so the commit a
  # tool reports is the one it was built from.
  foreach(attn_git_file HEAD packed-refs)
    execute_process(
      COMMAND ${GIT_EXECUTABLE} rev-parse --git-path ${attn_git_file}
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      OUTPUT_VARIABLE attn_git_path OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(attn_git_path AND EXISTS "${PROJECT_SOURCE_DIR}/${attn_git_path}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
        "${PROJECT_SOURCE_DIR}/${attn_git_path}")
    endif()
  endforeach()
  execute_process(
    COMMAND ${GIT_EXECUTABLE} symbolic-ref -q HEAD
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    OUTPUT_VARIABLE attn_git_ref OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(attn_git_ref)
    execute_process(
      COMMAND ${GIT_EXECUTABLE} rev-parse --git-path ${attn_git_ref}
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      OUTPUT_VARIABLE attn_git_path OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(EXISTS "${PROJECT_SOURCE_DIR}/${attn_git_path}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
        "${PROJECT_SOURCE_DIR}/${attn_git_path}")
    endif()
  endif()
endif()
message(STATUS "Attn ${PROJECT_VERSION}, git commit '${ATTN_GIT_COMMIT}', LLVM ${LLVM_PACKAGE_VERSION}")

configure_file(${PROJECT_SOURCE_DIR}/include/attn/Support/VersionInfo.h.in
  ${PROJECT_BINARY_DIR}/include/attn/Support/VersionInfo.h @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/runtime/include/attnrt/version.h.in
  ${PROJECT_BINARY_DIR}/runtime/include/attnrt/version.h @ONLY)
