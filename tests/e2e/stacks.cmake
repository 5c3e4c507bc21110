# stacks_test.cpp: Python and C call stacks on large allocations, decoded straight off the
# wire (included from CMakeLists.txt; kept apart so that its settings sit together).
add_executable(memtap_test_stack_alloc ${CMAKE_CURRENT_LIST_DIR}/../programs/stack_alloc.c)
set_target_properties(memtap_test_stack_alloc PROPERTIES ENABLE_EXPORTS ON
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/programs)
target_sources(memtap_e2e_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/stacks_test.cpp)
target_link_libraries(memtap_e2e_test PRIVATE memtap_wire)
target_compile_definitions(memtap_e2e_test PRIVATE
  MEMTAP_TEST_STACK_ALLOC="$<TARGET_FILE:memtap_test_stack_alloc>")
add_dependencies(memtap_e2e_test memtap_test_stack_alloc)
