# The engine sources that read files from users: what the libFuzzer targets exercise. The
# `fuzz` preset builds only these (tests/fuzz/CMakeLists.txt); the `asan` preset instruments only
# these with libFuzzer's coverage (core/CMakeLists.txt), so the sanitizer run of the whole test
# suite does not pay for coverage callbacks in the maths.
set(ATLAS_FUZZ_PARSER_SOURCES
    ${PROJECT_SOURCE_DIR}/core/tensor/tensor.cpp
    ${PROJECT_SOURCE_DIR}/core/model/trace.cpp
    ${PROJECT_SOURCE_DIR}/core/model/attention_map.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/dump.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/safetensors.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/npy.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/json_text.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/input_file.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/atomic_file.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/output_folder.cpp
    ${PROJECT_SOURCE_DIR}/core/config/config.cpp
    ${PROJECT_SOURCE_DIR}/core/config/config_sections.cpp
    ${PROJECT_SOURCE_DIR}/core/config/relative_recurrent_config.cpp
    ${PROJECT_SOURCE_DIR}/core/config/efficient_attention_config.cpp
    ${PROJECT_SOURCE_DIR}/core/config/score_seq2seq_config.cpp
    ${PROJECT_SOURCE_DIR}/core/config/memory_network_config.cpp
    ${PROJECT_SOURCE_DIR}/core/config/config_embeddings.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/tokenizer.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/bpe_tokenizer.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/bpe_merges.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/hf_bpe_tokenizer.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/hf_pretokenize.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/unicode_nfc.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/unicode_nfc_data.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/hf/hf_tokenizer_files.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/hf/hf_llama_tokenizer.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/hf/hf_config.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/hf/hf_tensor_source.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/hf/hf_gpt2.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/hf/hf_bert.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/hf/hf_vit.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/wordpiece_tokenizer.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/unicode_categories.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/unicode_categories_data.cpp
    ${PROJECT_SOURCE_DIR}/core/tokenizers/utf8.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/gguf.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/gguf_tokenizer.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/ggml_types.cpp
    ${PROJECT_SOURCE_DIR}/core/config/block_config.cpp
    ${PROJECT_SOURCE_DIR}/core/config/variant_choices.cpp
    ${PROJECT_SOURCE_DIR}/core/variants/rotary/rope_config.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/hf/hf_llama.cpp
)
