# The LibTorch programs and their tests, for either front end: included by this standalone
# project (LibTorch or an installed Kiln) and by Kiln's own build (tests/CMakeLists.txt, against
# the kiln::torch target of the tree). Set before including:
#   TORCH_FRONT_END_LIBRARIES  what each program links
#   LIBTORCH_PROGRAM_PREFIX    prefix of the executable and test names ("" or "libtorch_")
#   LIBTORCH_PROGRAMS          which programs to build
#   LIBTORCH_LONG_TESTS        ON: also the long runs (a full mnist epoch, dcgan, mnist_compiled);
#                              OFF under ASan, where test_torch covers the same code
#   LIBTORCH_COMPILED          ON (Kiln only): also mnist_compiled, regression_compiled and
#                              dcgan_compiled, the same sources with their torch::compile line
#                              (-DKILN_COMPILE)
#   LIBTORCH_BENCH             ON: also cnn_step and lstm_step, kiln-bench's step timers (and
#                              with LIBTORCH_COMPILED, lstm_step_compiled)
#   LIBTORCH_PCH               ON: the programs share one precompiled <torch/torch.h> (most of
#                              each program's compile time is that header)
set(_p "${LIBTORCH_PROGRAM_PREFIX}")
set(_src ${CMAKE_CURRENT_LIST_DIR})
set(_pch_owner "")
foreach(program ${LIBTORCH_PROGRAMS})
  add_executable(${_p}${program} ${_src}/${program}.cpp)
  target_link_libraries(${_p}${program} PRIVATE ${TORCH_FRONT_END_LIBRARIES})
  if(LIBTORCH_PCH AND _pch_owner STREQUAL "")
    set(_pch_owner ${_p}${program})
    target_precompile_headers(${_pch_owner} PRIVATE <torch/torch.h>)
  elseif(LIBTORCH_PCH)
    target_precompile_headers(${_p}${program} REUSE_FROM ${_pch_owner})
  endif()
endforeach()
# X_compiled: the same source with its torch::compile line (-DKILN_COMPILE).
if(LIBTORCH_COMPILED)
  foreach(program mnist regression dcgan)
    if(program IN_LIST LIBTORCH_PROGRAMS)
      add_executable(${_p}${program}_compiled ${_src}/${program}.cpp)
      target_link_libraries(${_p}${program}_compiled PRIVATE ${TORCH_FRONT_END_LIBRARIES})
      target_compile_definitions(${_p}${program}_compiled PRIVATE KILN_COMPILE)
      if(LIBTORCH_PCH)
        target_precompile_headers(${_p}${program}_compiled REUSE_FROM ${_pch_owner})
      endif()
    endif()
  endforeach()
endif()
# cnn_step, lstm_step: kiln-bench's step timers (bench/libtorch.cpp), run by the benchmark only.
if(LIBTORCH_BENCH)
  set(_bench_programs cnn_step lstm_step)
  foreach(program ${_bench_programs})
    add_executable(${_p}${program} ${_src}/${program}.cpp)
    target_link_libraries(${_p}${program} PRIVATE ${TORCH_FRONT_END_LIBRARIES})
    if(LIBTORCH_PCH)
      target_precompile_headers(${_p}${program} REUSE_FROM ${_pch_owner})
    endif()
  endforeach()
  if(LIBTORCH_COMPILED)
    add_executable(${_p}lstm_step_compiled ${_src}/lstm_step.cpp)
    target_link_libraries(${_p}lstm_step_compiled PRIVATE ${TORCH_FRONT_END_LIBRARIES})
    target_compile_definitions(${_p}lstm_step_compiled PRIVATE KILN_COMPILE)
  endif()
endif()

# The MNIST reader opens ROOT/train-images-idx3-ubyte etc. uncompressed; Debian ships them
# gzipped. The test fixture below writes them, gunzipped, into BUILD_DIR/fashion-mnist.
set(FASHION_MNIST_ROOT ${CMAKE_CURRENT_BINARY_DIR}/fashion-mnist)
add_test(NAME ${_p}prepare_fashion_mnist
         COMMAND ${_src}/prepare-fashion-mnist ${FASHION_MNIST_ROOT} ${FASHION_MNIST_SOURCE})
set_tests_properties(${_p}prepare_fashion_mnist PROPERTIES FIXTURES_SETUP ${_p}fashion_mnist)

# custom_dataset, custom_function, regression and dcgan fail by their exit status (dcgan also
# checks that its checkpoints restore). The mnist runs print a last line starting with RESULT,
# matched against an accuracy floor (a PASS_REGULAR_EXPRESSION makes ctest ignore the exit
# status). LibTorch 1.13 on Fashion-MNIST, seed 1: 100 batches give test_accuracy=0.4218, one
# epoch 0.7455; chance is 0.1. Kiln draws other random numbers (initial weights, dropout masks,
# shuffles), so its accuracy is LibTorch's within noise, not the same digits.
if(mnist IN_LIST LIBTORCH_PROGRAMS)
  add_test(NAME ${_p}mnist_short COMMAND ${_p}mnist ${FASHION_MNIST_ROOT} 1 100)
  set_tests_properties(${_p}mnist_short PROPERTIES FIXTURES_REQUIRED ${_p}fashion_mnist
                       TIMEOUT 600 PASS_REGULAR_EXPRESSION "RESULT test_accuracy=0\\.[2-9]")
  if(LIBTORCH_COMPILED AND LIBTORCH_LONG_TESTS)
    add_test(NAME ${_p}mnist_compiled_short COMMAND ${_p}mnist_compiled ${FASHION_MNIST_ROOT} 1 100)
    set_tests_properties(${_p}mnist_compiled_short PROPERTIES FIXTURES_REQUIRED ${_p}fashion_mnist
                         TIMEOUT 900 PASS_REGULAR_EXPRESSION "RESULT test_accuracy=0\\.[2-9]")
  endif()
  if(LIBTORCH_LONG_TESTS)
    add_test(NAME ${_p}mnist_epoch COMMAND ${_p}mnist ${FASHION_MNIST_ROOT} 1)
    set_tests_properties(${_p}mnist_epoch PROPERTIES FIXTURES_REQUIRED ${_p}fashion_mnist
                         TIMEOUT 1800 LABELS long
                         PASS_REGULAR_EXPRESSION "RESULT test_accuracy=0\\.(6[89]|7|8|9)")
  endif()
endif()
if(regression IN_LIST LIBTORCH_PROGRAMS)
  add_test(NAME ${_p}regression COMMAND ${_p}regression)
  set_tests_properties(${_p}regression PROPERTIES TIMEOUT 300)
  if(LIBTORCH_COMPILED)
    add_test(NAME ${_p}regression_compiled COMMAND ${_p}regression_compiled)
    set_tests_properties(${_p}regression_compiled PROPERTIES TIMEOUT 300)
  endif()
endif()
if(dcgan IN_LIST LIBTORCH_PROGRAMS AND LIBTORCH_LONG_TESTS)
  add_test(NAME ${_p}dcgan_short COMMAND ${_p}dcgan ${FASHION_MNIST_ROOT} 20)
  set_tests_properties(${_p}dcgan_short PROPERTIES FIXTURES_REQUIRED ${_p}fashion_mnist
                       TIMEOUT 600 WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  if(LIBTORCH_COMPILED)
    # Its own folder: both runs write checkpoints into the working directory.
    file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/dcgan_compiled)
    add_test(NAME ${_p}dcgan_compiled_short COMMAND ${_p}dcgan_compiled ${FASHION_MNIST_ROOT} 8)
    set_tests_properties(${_p}dcgan_compiled_short PROPERTIES FIXTURES_REQUIRED
                         ${_p}fashion_mnist TIMEOUT 900
                         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/dcgan_compiled)
  endif()
endif()
if(custom_dataset IN_LIST LIBTORCH_PROGRAMS)
  add_test(NAME ${_p}custom_dataset COMMAND ${_p}custom_dataset)
  set_tests_properties(${_p}custom_dataset PROPERTIES TIMEOUT 300
                       WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endif()
if(custom_function IN_LIST LIBTORCH_PROGRAMS)
  add_test(NAME ${_p}custom_function COMMAND ${_p}custom_function)
  set_tests_properties(${_p}custom_function PROPERTIES TIMEOUT 300)
endif()
