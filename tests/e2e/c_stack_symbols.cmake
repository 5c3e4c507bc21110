# c_stack_symbols_test.cpp: C stacks recorded as return addresses and symbolised by the
# monitor (included from CMakeLists.txt). The program is built with debug information and
# no exported symbols, so its frames can be named only from its module and offsets.
add_executable(memtap_test_c_stack_symbols ${CMAKE_CURRENT_LIST_DIR}/../programs/c_stack_symbols.c)
target_compile_options(memtap_test_c_stack_symbols PRIVATE -g -O1 -fno-omit-frame-pointer)
target_link_libraries(memtap_test_c_stack_symbols PRIVATE ${CMAKE_DL_LIBS})
add_library(memtap_test_c_stack_lib SHARED ${CMAKE_CURRENT_LIST_DIR}/../programs/c_stack_lib.c)
target_compile_options(memtap_test_c_stack_lib PRIVATE -g -O1)
set_target_properties(memtap_test_c_stack_symbols memtap_test_c_stack_lib PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/programs
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/programs)
target_sources(memtap_e2e_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/c_stack_symbols_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/c_stack_frames.cpp)
target_compile_definitions(memtap_e2e_test PRIVATE
  MEMTAP_TEST_C_STACK_SYMBOLS="$<TARGET_FILE:memtap_test_c_stack_symbols>"
  MEMTAP_TEST_C_STACK_LIB="$<TARGET_FILE:memtap_test_c_stack_lib>")
add_dependencies(memtap_e2e_test memtap_test_c_stack_symbols memtap_test_c_stack_lib)
