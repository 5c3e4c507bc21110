# context_wire_test.cpp: the agent's context events decoded straight off the wire
# (included from CMakeLists.txt; kept apart so that its settings sit together).
target_sources(memtap_e2e_test PRIVATE context_wire_test.cpp)
target_link_libraries(memtap_e2e_test PRIVATE memtap_wire)
target_compile_definitions(memtap_e2e_test PRIVATE
  MEMTAP_TEST_CONTEXT_CALLS="$<TARGET_FILE:memtap_test_context_calls>")
add_dependencies(memtap_e2e_test memtap_test_context_calls)

