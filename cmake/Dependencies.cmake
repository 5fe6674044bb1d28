# Every third-party dependency is found here, once. All are Debian 12 packages: the `packages`
# list at the top of ./spora installs whichever a machine lacks.
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
# oneDNN (libdnnl-dev): f32 GEMM blocks where it beats OpenBLAS on the shape
# (backends/cpu/gemm_choice.h). Optional: without it every GEMM runs in OpenBLAS. Debian's
# build has an OpenCL GPU runtime, so its CMake config requires OpenCL's headers
# (ocl-icd-opencl-dev, which libdnnl-dev only recommends) and fails the configure without them:
# look for OpenCL first and skip oneDNN, saying so, where it is missing.
find_package(OpenCL QUIET)
if(OpenCL_FOUND)
  find_package(dnnl CONFIG QUIET)
else()
  message(STATUS "oneDNN not used: its CMake config needs OpenCL's headers (ocl-icd-opencl-dev)")
endif()
find_package(antlr4-runtime REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(Boost REQUIRED COMPONENTS program_options iostreams graph)
find_package(MPI COMPONENTS CXX)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SimGrid REQUIRED IMPORTED_TARGET simgrid>=3.32)
find_program(ANTLR4_TOOL antlr4 REQUIRED)

# ANTLR's runtime target carries no include directory: add it as SYSTEM (silences -Wattributes).
add_library(spora_antlr_runtime INTERFACE)
target_link_libraries(spora_antlr_runtime INTERFACE antlr4_shared)
target_include_directories(spora_antlr_runtime SYSTEM INTERFACE ${ANTLR4_INCLUDE_DIR})
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # clang rejects one header of the ANTLR 4.9 runtime (misc/InterpreterDataReader.h: a
  # defaulted constructor with a const member), which the umbrella header includes and
  # nothing of ours uses. A copy of the umbrella header without it, found first, lets clang
  # (the fuzzing build) compile the parser.
  file(READ ${ANTLR4_INCLUDE_DIR}/antlr4-runtime.h _umbrella)
  string(REPLACE "#include \"misc/InterpreterDataReader.h\"" "" _umbrella "${_umbrella}")
  file(WRITE ${CMAKE_BINARY_DIR}/antlr-clang-shim/antlr4-runtime.h "${_umbrella}")
  target_include_directories(spora_antlr_runtime SYSTEM BEFORE INTERFACE ${CMAKE_BINARY_DIR}/antlr-clang-shim)
endif()

# CUDA (optional).
set(SPORA_HAVE_CUDA OFF)
if(NOT SPORA_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(SPORA_HAVE_CUDA ON)
      find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
      find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
    endif()
  endif()
  if(SPORA_CUDA STREQUAL "ON" AND NOT SPORA_HAVE_CUDA)
    message(FATAL_ERROR "SPORA_CUDA=ON but no CUDA toolkit was found (looked for /usr/local/cuda/bin/nvcc)")
  endif()
endif()
message(STATUS "Spora: CUDA parts ${SPORA_HAVE_CUDA}")
