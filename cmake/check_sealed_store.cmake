# check_sealed_store.cmake - the store is sealed: only the store
# (harness/lib/store*.c, store*.h) and the results loader
# (harness/lib/results.c) touch SQLite.  Every other C
# file under harness/, boards/, suites/ and bench/ must go through store.h;
# the tests (harness/tests/) may use store_internal.h to inject faults.
#
#   cmake -DROOT=<source tree> -P check_sealed_store.cmake
#
# Fails naming each file that calls sqlite3_*, includes <sqlite3.h> or
# includes store_internal.h.  ctest runs it on the tree (sealed_store) and on
# a tree with two leaks (sealed_store_detects_leak, expected to fail), so the
# check itself cannot silently stop working.
if(NOT ROOT)
  message(FATAL_ERROR "check_sealed_store: give -DROOT=<source tree>")
endif()
file(GLOB_RECURSE files RELATIVE "${ROOT}"
  "${ROOT}/harness/*.c" "${ROOT}/harness/*.h" "${ROOT}/boards/*.c" "${ROOT}/boards/*.h"
  "${ROOT}/suites/*.c" "${ROOT}/suites/*.h" "${ROOT}/bench/*.c" "${ROOT}/bench/*.h")
set(leaks "")
set(checked 0)
foreach(f ${files})
  if(f MATCHES "^harness/tests/")
    continue()
  endif()
  # The store's own files sit directly in harness/lib: a store_*.c in a
  # subdirectory (harness/lib/upload/) is not the store.
  if(f MATCHES "^harness/lib/(store[^/]*|results\\.c)$")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  file(STRINGS "${ROOT}/${f}" hits REGEX "sqlite3_|sqlite3\\.h|store_internal\\.h")
  if(hits)
    list(GET hits 0 first)
    string(STRIP "${first}" first)
    string(APPEND leaks "  ${f}: ${first}\n")
  endif()
endforeach()
if(checked EQUAL 0)
  message(FATAL_ERROR "check_sealed_store: no source files under ${ROOT}")
endif()
if(leaks)
  message(FATAL_ERROR "SQLite outside the store (use or add a store_*/results_* function):\n${leaks}")
endif()
message(STATUS "sealed store: ${checked} files outside the store, none touches SQLite")
