#include "engine/memory/keep_freed.h"

#include <malloc.h>

namespace tinyformer {

void keep_freed_memory() {
#if defined(M_MMAP_MAX) && defined(M_TRIM_THRESHOLD)
    mallopt(M_MMAP_MAX, 0);               // serve every block from the heap, never from mmap
    mallopt(M_TRIM_THRESHOLD, 1 << 30);   // and do not hand freed heap memory back below 1 GiB
#endif  // else (WebAssembly: one linear memory, nothing handed back) there is nothing to set
}

}  // namespace tinyformer
