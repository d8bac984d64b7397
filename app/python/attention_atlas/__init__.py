"""Attention Atlas from Python: transformer models, their traced attention and activations as
numpy arrays (docs/python.md). The engine is the native module _atlas (app/python/*.cpp)."""
import os as _os

# OpenMP threads that wait passively, as the CLI's do (app/openmp_waits.h): libgomp reads the
# variable once, when it is loaded, which importing _atlas below does. Its default spins at the
# end of every parallel region; beside another busy process that made a forward of
# preset:vanilla-base at 128 tokens 14x slower than `atlas bench` on a 2-core machine. Without
# effect when libgomp was loaded before (another extension imported first); set it yourself then.
_os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from ._atlas import (AtlasError, Figure, Model, Trace, compare, corpus_heads, corpus_index,  # noqa: E402
                     corpus_links, corpus_merge, open, panels)  # (after the variable is set)

# The allocator policy of the CLI and the app (core/tensor/allocation_policy.h): large blocks from
# one heap, up to 1 GB of freed memory kept for the next run instead of returned to the kernel,
# so a run does not page-fault its maps afresh (3.7x the CLI's time at 512 tokens without it).
# It is the whole process's: ATLAS_PYTHON_DEFAULT_MALLOC=1 keeps glibc's defaults.
if not _os.environ.get("ATLAS_PYTHON_DEFAULT_MALLOC"):
    from ._atlas import _keep_freed_memory_for_reuse
    _keep_freed_memory_for_reuse()

__all__ = ["AtlasError", "Figure", "Model", "Trace", "compare", "corpus_heads", "corpus_index", "corpus_links",
           "corpus_merge", "open", "panels"]
