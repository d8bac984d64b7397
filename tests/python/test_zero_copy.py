"""Trace arrays are views of the engine's buffers: no copy, kept alive by the Trace."""
import gc

import numpy as np
import pytest

TEXT = "zero copy"


def test_arrays_do_not_own_their_data_and_their_base_is_the_trace(atlas):
    trace = atlas.open("preset:tiny-decoder").run(TEXT, hidden=True)
    for name in trace.names():
        array = trace[name]
        assert not array.flags.owndata, name
        assert array.base is trace, name
        assert not array.flags.writeable, name


def test_two_reads_share_one_buffer(atlas):
    trace = atlas.open("preset:tiny-decoder").run(TEXT)
    first, second = trace["decoder.layer0.self_attn"], trace["decoder.layer0.self_attn"]
    assert first is not second
    assert np.shares_memory(first, second)
    # an alias reads the same buffer too
    assert np.shares_memory(first, trace["blocks.0.attn.hook_pattern"])


def test_int32_arrays_are_converted_once_and_shared(atlas):
    trace = atlas.open("preset:tiny-sparse-strided").run(TEXT)
    ints = [n for n in trace.names() if trace[n].dtype == np.int32]
    assert ints, "the sparse model traces int32 CSR companions"
    for name in ints:
        assert np.shares_memory(trace[name], trace[name])
        assert trace[name].base is trace


def test_an_array_outlives_its_trace_and_model(atlas):
    model = atlas.open("preset:tiny-decoder")
    trace = model.run(TEXT)
    array = trace["logits"]
    expected = array.copy()
    del trace, model
    gc.collect()
    # the engine's buffer is still there: the array's base (the Trace) keeps the run alive
    assert array.base is not None
    assert np.array_equal(array, expected)
    # a second run allocates elsewhere; the old buffer is untouched
    other = atlas.open("preset:tiny-decoder").run("something else entirely, longer").logits
    assert not np.shares_memory(array, other)
    assert np.array_equal(array, expected)


def test_writing_into_a_trace_array_is_refused(atlas):
    trace = atlas.open("preset:tiny-decoder").run(TEXT)
    array = trace["logits"]
    with pytest.raises(ValueError, match="read-only"):
        array[0, 0] = 1.0
