# Sanitizer and libFuzzer builds of Attn's own targets (docs/reliability.md).
#
#   -DATTN_SANITIZE=address,undefined   ASan + UBSan (+ LeakSanitizer, part of ASan)
#   -DATTN_SANITIZE=thread              ThreadSanitizer
#   -DATTN_FUZZ=ON                      the libFuzzer targets of test/fuzz; implies
#                                       address,undefined when ATTN_SANITIZE is empty
#
# The flags apply to every target this project defines (runtime, compiler
# libraries, tools, tests, the mock model), not to Debian's prebuilt
# libLLVM.so/libMLIR.so, nor to the code attn-compile generates (libmodel.so).
# ASan and UBSan need nothing from the libraries they do not instrument;
# ThreadSanitizer sees every access our code makes and the synchronization of
# libc/libstdc++ through its interceptors. scripts/sanitize.sh and
# scripts/fuzz.sh configure separate build directories with these options.

set(ATTN_SANITIZE "" CACHE STRING
    "Sanitizers for Attn's own targets: address,undefined | thread | empty")
option(ATTN_FUZZ "Build the libFuzzer targets (test/fuzz); needs clang" OFF)

if(ATTN_FUZZ AND NOT ATTN_SANITIZE)
  set(ATTN_SANITIZE "address,undefined" CACHE STRING
      "Sanitizers for Attn's own targets: address,undefined | thread | empty" FORCE)
endif()

if(ATTN_SANITIZE OR ATTN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR
     NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ATTN_SANITIZE/ATTN_FUZZ need clang (clang-22 and "
                        "clang++-22): the runtimes are libclang-rt-22-dev's")
  endif()
endif()

if(ATTN_SANITIZE)
  string(REPLACE "," ";" attn_sanitizers "${ATTN_SANITIZE}")
  foreach(s IN LISTS attn_sanitizers)
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "ATTN_SANITIZE: unknown sanitizer '${s}' "
                          "(address, undefined, thread, leak)")
    endif()
  endforeach()
  if("thread" IN_LIST attn_sanitizers AND
     ("address" IN_LIST attn_sanitizers OR "leak" IN_LIST attn_sanitizers))
    message(FATAL_ERROR "ATTN_SANITIZE: thread cannot be combined with "
                        "address or leak; use two build directories")
  endif()
  if(ATTN_FUZZ AND NOT "address" IN_LIST attn_sanitizers)
    message(FATAL_ERROR "ATTN_FUZZ needs ATTN_SANITIZE to include address")
  endif()
  string(REPLACE ";" "," attn_sanitize_list "${attn_sanitizers}")

  set(attn_sanitize_flags
    -fsanitize=${attn_sanitize_list}
    # Whole stacks in reports, file:line in frames.
    -fno-omit-frame-pointer -gline-tables-only)
  if("undefined" IN_LIST attn_sanitizers)
    # Any UB report is a failure, not a line in a log.
    # vptr: the MLIR-based targets are built with -fno-rtti (as LLVM is) and
    # their class hierarchies live in libMLIR.so, which has no UBSan type
    # info; LLVM's own UBSan builds disable it for the same reason.
    # test/sanitizers/ubsan-ignorelist.txt: checks disabled for reported
    # bugs outside the runtime, one function each, until they are fixed.
    list(APPEND attn_sanitize_flags
      -fno-sanitize-recover=all -fno-sanitize=vptr
      -fsanitize-ignorelist=${CMAKE_SOURCE_DIR}/test/sanitizers/ubsan-ignorelist.txt)
  endif()
  add_compile_options(${attn_sanitize_flags})
  add_link_options(-fsanitize=${attn_sanitize_list})

  # Sanitized shared libraries (libattnrt.so, the mock models) leave the
  # sanitizer runtime's symbols to the executable that loads them, so
  # "every symbol defined at link time" cannot hold here. HandleLLVMOptions
  # adds -z defs unless LLVM_USE_SANITIZER is set; the runtime checks
  # ATTN_SANITIZE for its own --no-undefined.
  string(REPLACE "-Wl,-z,defs" "" CMAKE_SHARED_LINKER_FLAGS
         "${CMAKE_SHARED_LINKER_FLAGS}")
  message(STATUS "Attn: sanitizers ${attn_sanitize_list} on our targets")
endif()

if(ATTN_FUZZ)
  # Coverage feedback from all our code (the runtime's parsers, the attn
  # dialect's parsers and verifiers, the config reader); only the fuzz
  # targets themselves link libFuzzer's main (-fsanitize=fuzzer).
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "Attn: libFuzzer targets enabled (test/fuzz)")
endif()
