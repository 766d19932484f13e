# Note [Layers]
# Kiln's folders are layers: a folder may include headers of its own folder and of the folders
# listed for it below, never of a folder above it. The build runs this check before compiling
# libkiln (CMakeLists.txt), so an include that runs back up fails the build, naming the file and
# the edge. Public headers (include/kiln) include only public headers. The lists are the design:
# change them only when a folder's place in ARCHITECTURE.md's code map changes.
#
#   util                                   files, JSON: no Kiln types but errors
#   numerics                               the primitives' scalar semantics (no Kiln types at all)
#   sym -> core -> trace -> dispatch       symbolic integers; tensors; logs; the op registry
#   kernels -> ops -> autograd             eager kernels; the op table; eager autograd
#   nn, optim, data, io                    built on the eager library
#   graph -> capture, aot, lower           the graph IR; its producers and consumers
#   lower -> sched -> codegen              loop IR, schedule, C++
#   runtime                                Programs, the executor, the compiler and caches; below
#                                          codegen, so that a packaged model runs with no compiler
#   pipeline                               the composition root: may include everything
#
# The layers and what each may use are cmake/layers.cmake's lists, which also declare each
# layer's object library (CMakeLists.txt).
#
# Usage: cmake -DROOT=<directory holding src/ and include/> -P check_layers.cmake
cmake_minimum_required(VERSION 3.25)

include(${CMAKE_CURRENT_LIST_DIR}/layers.cmake)

# Known back-edges, file by file, each to be removed (ARCHITECTURE.md, "Known debts"). A new one
# is not added here: move the shared code down instead. (None remain.)
set(exceptions "")

if(NOT ROOT)
  message(FATAL_ERROR "check_layers: pass -DROOT=<source directory>")
endif()
set(violations "")
file(GLOB_RECURSE files RELATIVE "${ROOT}" "${ROOT}/src/*.h" "${ROOT}/src/*.cpp"
     "${ROOT}/include/*.h")
foreach(file IN LISTS files)
  file(STRINGS "${ROOT}/${file}" includes REGEX "^#include \"src/")
  if(file MATCHES "^include/")
    foreach(line IN LISTS includes)
      list(APPEND violations "${file}: a public header includes ${line}")
    endforeach()
    continue()
  endif()
  string(REGEX MATCH "^src/([^/]+)/" _ "${file}")
  set(layer "${CMAKE_MATCH_1}")
  if(NOT DEFINED KILN_LAYER_USES_${layer})
    list(APPEND violations "${file}: src/${layer} is no layer of cmake/check_layers.cmake; add it")
    continue()
  endif()
  foreach(line IN LISTS includes)
    string(REGEX MATCH "^#include \"src/([^/\"]+)/" _ "${line}")
    set(target "${CMAKE_MATCH_1}")
    if(target STREQUAL layer OR target IN_LIST KILN_LAYER_USES_${layer})
      continue()
    endif()
    if("${file} -> ${target}" IN_LIST exceptions)
      continue()
    endif()
    list(JOIN KILN_LAYER_USES_${layer} ", " may_use)
    list(APPEND violations
         "${file}: src/${layer} may not include src/${target} (${line}); src/${layer} may use: ${may_use}")
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "Includes that run back up the layers (Note [Layers] in "
                      "cmake/check_layers.cmake):\n  ${text}\nMove the shared code to a lower "
                      "layer instead.")
endif()
