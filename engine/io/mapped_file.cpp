#include "engine/io/mapped_file.h"

#include "engine/error.h"

#include <cerrno>
#include <cstring>

#if !defined(__EMSCRIPTEN__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace tinyformer {

#if defined(__EMSCRIPTEN__)

MappedFile::MappedFile(const std::string& path) { fail(path, ": cannot map files on this platform (no mmap)"); }
MappedFile::~MappedFile() = default;

#else

MappedFile::MappedFile(const std::string& path) {
    // O_NONBLOCK: a FIFO put in the file's place after the caller's checks is
    // opened without waiting for a writer, then refused as not a regular file.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
    struct stat status {};
    if (::fstat(fd, &status) != 0) {
        const int error = errno;
        ::close(fd);
        fail(path, ": cannot read its size: ", std::strerror(error));
    }
    if (!S_ISREG(status.st_mode)) {
        ::close(fd);
        fail(path, ": not a regular file");
    }
    size_ = static_cast<size_t>(status.st_size);
    if (size_ > 0) {
        void* base = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (base == MAP_FAILED) {
            const int error = errno;
            ::close(fd);
            fail(path, ": cannot map its ", size_, " bytes into memory: ", std::strerror(error));
        }
        base_ = static_cast<const uint8_t*>(base);
    }
    ::close(fd);  // the mapping keeps the file's pages; the descriptor is not needed
}

MappedFile::~MappedFile() {
    if (base_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

#endif

bool MappedFile::contains(const void* data, size_t count) const {
    const auto address = reinterpret_cast<uintptr_t>(data), base = reinterpret_cast<uintptr_t>(base_);
    return base_ && address >= base && count <= size_ && address - base <= size_ - count;
}

}  // namespace tinyformer
