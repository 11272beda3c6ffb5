# Cross toolchain for the DUT agent on armhf (Debian: gcc-arm-linux-gnueabihf, libc6-dev-armhf-cross).
#   cmake -S . -B build-armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake -DEMMCLAB_AGENT_ONLY=ON
#   cmake --build build-armhf --target emmclab-agent
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(EMMCLAB_CROSS_TRIPLE arm-linux-gnueabihf)
set(CMAKE_C_COMPILER ${EMMCLAB_CROSS_TRIPLE}-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/${EMMCLAB_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Run target binaries (try_run, tests) under qemu-user when it is installed.
find_program(EMMCLAB_QEMU_armhf qemu-arm-static qemu-arm)
if(EMMCLAB_QEMU_armhf)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${EMMCLAB_QEMU_armhf} -L /usr/${EMMCLAB_CROSS_TRIPLE})
endif()
