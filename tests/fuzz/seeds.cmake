# seeds.cmake - the fuzz tests' fixture (tests/CMakeLists.txt): a fresh
# copy of the seed corpora in DIR, written by WRITER (write_seeds.c), so
# that every run starts from the seeds and writes only to the build tree.
#   cmake -DWRITER=path/to/write_seeds -DDIR=scratch/dir -P seeds.cmake
file(REMOVE_RECURSE ${DIR})
execute_process(COMMAND ${WRITER} ${DIR} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "write_seeds failed: ${rc}")
endif()
