# Cross toolchain for the DUT agent on aarch64 (Debian: gcc-aarch64-linux-gnu, libc6-dev-arm64-cross).
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake -DEMMCLAB_AGENT_ONLY=ON
#   cmake --build build-aarch64 --target emmclab-agent
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(EMMCLAB_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${EMMCLAB_CROSS_TRIPLE}-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/${EMMCLAB_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Run target binaries (try_run, tests) under qemu-user when it is installed.
find_program(EMMCLAB_QEMU_aarch64 qemu-aarch64-static qemu-aarch64)
if(EMMCLAB_QEMU_aarch64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EMMCLAB_QEMU_aarch64} -L /usr/${EMMCLAB_CROSS_TRIPLE})
endif()
