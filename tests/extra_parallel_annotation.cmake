# Semi-auto parallel annotations (issue 9: shard(x, (2, 1)), shard=, @stage(k)):
# tests/parallel/annotation_*_test.cpp -> test_parallel_annotation (lowering and its errors,
# eager vs graph, the partitioner's pins, propagation from the annotations, 4 in-process ranks).
include(GoogleTest)
if(TARGET spora_parallel_search_ir AND TARGET spora_parallel_partition)
  file(GLOB SPORA_PARALLEL_ANNOTATION_TEST_SOURCES CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/parallel/annotation_*_test.cpp)
  add_executable(test_parallel_annotation ${SPORA_PARALLEL_ANNOTATION_TEST_SOURCES}
                 ${CMAKE_SOURCE_DIR}/tools/spmd_run.cpp)
  target_link_libraries(test_parallel_annotation PRIVATE spora_comm spora_parallel_partition
                        spora_parallel_search_ir spora_sim spora_ops spora_comm spora_autodiff
                        spora_semantics spora_lang GTest::gtest_main)
  target_compile_definitions(test_parallel_annotation PRIVATE SPORA_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  gtest_discover_tests(test_parallel_annotation WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                       DISCOVERY_TIMEOUT 60)
endif()
