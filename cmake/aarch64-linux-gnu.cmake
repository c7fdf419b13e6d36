# Cross-compiling for 64-bit Arm Linux with Debian's cross compiler (g++-aarch64-linux-gnu) and
# its multiarch libraries (libssl-dev:arm64, libgtest-dev:arm64; scripts/install-deps.sh installs
# them). Used by `make aarch64`, which builds the core layers and their tests (KIPP_CORE_ONLY).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Multiarch puts the target's libraries and headers under /usr (lib/aarch64-linux-gnu, which
# CMAKE_LIBRARY_ARCHITECTURE selects), so the host's paths are searched as well as the root's;
# CMake package files (nlohmann_json's, arch-independent) come from the host too.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config (which FindOpenSSL asks for hints) must describe the target's libraries, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# The test binary is linked statically (tests/core/CMakeLists.txt), so OpenSSL's archive.
set(OPENSSL_USE_STATIC_LIBS TRUE)
