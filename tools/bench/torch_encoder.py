#!/usr/bin/python3
"""PyTorch side of the `encoder` benchmark suite (tools/bench/bench_encoder.cpp).

The same modules users run:
    nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0,
                          batch_first=True), 6)        # post-LN, ReLU, no final norm
in eval() under torch.inference_mode(), x [B, T, 512] ~ N(0, 1), no mask. PyTorch
1.13 may take its fast path (torch._transformer_encoder_layer_fwd) here; that is
what users get, so it is allowed, and reported.

Per (B, T): one warm-up forward, then `reps` timed forwards; the median.

Run with Debian's interpreter (python3-torch), one process per thread count,
since the thread count must be fixed before torch does any work:
    /usr/bin/python3 tools/bench/torch_encoder.py --threads 1
--protocol prints "result B T reps median_s min_s" lines (for tinyformer-bench)
instead of the human-readable rows.
"""

import argparse
import ctypes
import os
import platform
import statistics
import sys
import time

DEFAULT_SIZES = "1:32:15,1:128:9,1:512:5,8:32:9,8:128:5,8:512:3"  # B:T:reps, as bench_encoder.cpp


def parse_sizes(text):
    sizes = []
    for item in text.split(","):
        batch, length, reps = (int(part) for part in item.split(":"))
        sizes.append((batch, length, reps))
    return sizes


def openblas_info():
    """(library, openblas_get_config(), openblas_get_num_threads()) of the
    OpenBLAS that torch's BLAS calls reach (Debian's libblas.so.3 is OpenBLAS
    through update-alternatives), or Nones when there is none."""
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            library = ctypes.CDLL(name)
            library.openblas_get_config.restype = ctypes.c_char_p
            return name, library.openblas_get_config().decode(), library.openblas_get_num_threads()
        except (OSError, AttributeError):
            continue
    return None, None, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, required=True, help="torch.set_num_threads(N), OMP and OpenBLAS threads")
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="B:T:reps,... (default: %(default)s)")
    parser.add_argument("--protocol", action="store_true", help="machine-readable result lines")
    args = parser.parse_args()

    # Before torch is imported: OpenMP (torch's own loops) and OpenBLAS (its
    # sgemm) read these once, at load.
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(variable, str(args.threads))

    import torch
    from torch import nn

    torch.set_num_threads(args.threads)

    print(f"python {platform.python_version()} ({sys.executable}), torch {torch.__version__}")
    config_lines = [line.strip().lstrip("- ") for line in torch.__config__.show().splitlines()]
    build = [line for line in config_lines if line.startswith(("Intel(R) MKL", "OpenMP", "CPU capability"))]
    blas_info = [part.strip() for line in config_lines for part in line.replace("Build settings:", "").split(",")
                 if part.strip().startswith(("BLAS_INFO=", "USE_MKLDNN=", "USE_OPENMP="))]
    print("torch.__config__.show(): " + "; ".join(build + blas_info))
    print(f"torch.backends.mkl.is_available() = {torch.backends.mkl.is_available()}, "
          f"torch.backends.mkldnn.is_available() = {torch.backends.mkldnn.is_available()}")
    library, blas_config, blas_threads = openblas_info()
    print(f"torch's sgemm: {blas_config or 'not OpenBLAS'}" + (f" (via {library})" if library else ""))
    print(f"threads: torch.get_num_threads() = {torch.get_num_threads()}, "
          f"get_num_interop_threads() = {torch.get_num_interop_threads()}, "
          f"OMP_NUM_THREADS = {os.environ['OMP_NUM_THREADS']}, "
          f"OPENBLAS_NUM_THREADS = {os.environ['OPENBLAS_NUM_THREADS']}, "
          f"openblas_get_num_threads() = {blas_threads}")

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True)  # post-LN, ReLU
    encoder = nn.TransformerEncoder(layer, 6).eval()  # no final norm, as in tinyformer's suite

    # Which path runs: the 1.13 fast path shows up as aten::_transformer_encoder_layer_fwd.
    with torch.inference_mode(), torch.autograd.profiler.profile() as profile:
        encoder(torch.randn(1, 8, 512))
    names = {event.name for event in profile.function_events}
    fast = "aten::_transformer_encoder_layer_fwd" in names
    print("path: " + ("fast path (aten::_transformer_encoder_layer_fwd)" if fast
                      else "ordinary path (no aten::_transformer_encoder_layer_fwd)"))
    if not args.protocol:
        print(f"{'B':>2}  {'T':>4}  {'reps':>4}  {'median ms':>10}  {'min ms':>9}  {'tok/s':>9}")

    with torch.inference_mode():
        for batch, length, reps in parse_sizes(args.sizes):
            x = torch.randn(batch, length, 512)
            encoder(x)  # warm-up
            seconds = []
            for _ in range(reps):
                start = time.perf_counter()
                encoder(x)
                seconds.append(time.perf_counter() - start)
            median = statistics.median(seconds)
            if args.protocol:
                print(f"result {batch} {length} {reps} {median:.9f} {min(seconds):.9f}", flush=True)
            else:
                print(f"{batch:>2}  {length:>4}  {reps:>4}  {median * 1e3:>10.2f}  {min(seconds) * 1e3:>9.2f}  "
                      f"{batch * length / median:>9.0f}", flush=True)


if __name__ == "__main__":
    main()
