# examples_test.cpp: the `memtap` Python package and the examples of examples/, run the way
# the README runs them (included from CMakeLists.txt; kept apart so that its settings sit
# together).
target_sources(memtap_e2e_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/examples_test.cpp)
target_compile_definitions(memtap_e2e_test PRIVATE
  MEMTAP_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
  MEMTAP_EXAMPLE_NATIVE="$<TARGET_FILE:memtap_example_native>")
add_dependencies(memtap_e2e_test memtap_example_native memtap_python)
