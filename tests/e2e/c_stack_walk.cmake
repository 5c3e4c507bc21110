# c_stack_walk_test.cpp: the frame-pointer walk of C stacks (agent/unwind.cpp) where it must
# not trust what it learnt (included from CMakeLists.txt). The programs keep frame pointers
# and carry debug information, so that each frame is named with its function.
add_executable(memtap_test_c_stack_unload ${CMAKE_CURRENT_LIST_DIR}/../programs/c_stack_unload.c)
target_compile_options(memtap_test_c_stack_unload PRIVATE -g -O1 -fno-omit-frame-pointer)
target_link_libraries(memtap_test_c_stack_unload PRIVATE ${CMAKE_DL_LIBS})
# One source, two builds of the same layout (functions aligned): the same return addresses,
# one with frame pointers and one without.
add_library(memtap_test_unload_fp SHARED ${CMAKE_CURRENT_LIST_DIR}/../programs/c_stack_unload_lib.c)
target_compile_options(memtap_test_unload_fp PRIVATE -g -O1 -falign-functions=64
  -fno-omit-frame-pointer)
add_library(memtap_test_unload_nofp SHARED
  ${CMAKE_CURRENT_LIST_DIR}/../programs/c_stack_unload_lib.c)
target_compile_options(memtap_test_unload_nofp PRIVATE -g -O1 -falign-functions=64
  -fomit-frame-pointer)
set_target_properties(memtap_test_c_stack_unload memtap_test_unload_fp memtap_test_unload_nofp
  PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/programs
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/programs)
target_sources(memtap_e2e_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/c_stack_walk_test.cpp)
target_compile_definitions(memtap_e2e_test PRIVATE
  MEMTAP_TEST_C_STACK_UNLOAD="$<TARGET_FILE:memtap_test_c_stack_unload>"
  MEMTAP_TEST_UNLOAD_FP="$<TARGET_FILE:memtap_test_unload_fp>"
  MEMTAP_TEST_UNLOAD_NOFP="$<TARGET_FILE:memtap_test_unload_nofp>")
add_dependencies(memtap_e2e_test memtap_test_c_stack_unload memtap_test_unload_fp
  memtap_test_unload_nofp)

add_executable(memtap_test_c_stack_bogus_fp ${CMAKE_CURRENT_LIST_DIR}/../programs/c_stack_bogus_fp.c)
target_compile_options(memtap_test_c_stack_bogus_fp PRIVATE -g -O1 -fno-omit-frame-pointer)
set_target_properties(memtap_test_c_stack_bogus_fp PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/programs)
target_compile_definitions(memtap_e2e_test PRIVATE
  MEMTAP_TEST_C_STACK_BOGUS_FP="$<TARGET_FILE:memtap_test_c_stack_bogus_fp>")
add_dependencies(memtap_e2e_test memtap_test_c_stack_bogus_fp)
