# The engine sources that read files from users: what the libFuzzer targets exercise. The
# `fuzz` preset builds only these (tests/fuzz/CMakeLists.txt); the `asan` preset instruments only
# these with libFuzzer's coverage (core/CMakeLists.txt), so the sanitizer run of the whole test
# suite does not pay for coverage callbacks in the maths.
#
# The variants' config files (core/variants/<m>/<name>_config.cpp) are found by their name, with
# the lists of their sections and compatibility-table rows generated from the folders
# (core/config/config_sections.cpp, variant_choices.cpp): a new variant adds no line here.
include(${PROJECT_SOURCE_DIR}/cmake/module_registry.cmake)
file(GLOB ATLAS_VARIANT_CONFIG_SOURCES CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/core/variants/*/*_config.cpp)
list(SORT ATLAS_VARIANT_CONFIG_SOURCES)
set(ATLAS_CONFIG_SECTIONS_LIST ${CMAKE_BINARY_DIR}/generated/config_sections_list.cpp)
atlas_variant_module_list(${ATLAS_CONFIG_SECTIONS_LIST} ${PROJECT_SOURCE_DIR}/core/variants
                          core/config/config_json.h atlas::config_json ConfigSection
                          sections *_config.cpp)
set(ATLAS_VARIANT_CHOICES_LIST ${CMAKE_BINARY_DIR}/generated/variant_choices_list.cpp)
atlas_variant_module_list(${ATLAS_VARIANT_CHOICES_LIST} ${PROJECT_SOURCE_DIR}/core/variants
                          core/config/config_json.h atlas::config_json VariantChoice
                          choices *_config.cpp)

set(ATLAS_FUZZ_PARSER_SOURCES
    ${PROJECT_SOURCE_DIR}/core/tensor/tensor.cpp
    ${PROJECT_SOURCE_DIR}/core/model/trace.cpp
    ${PROJECT_SOURCE_DIR}/core/model/attention_map.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/dump.cpp
    ${PROJECT_SOURCE_DIR}/core/analysis/corpus_store.cpp
    ${PROJECT_SOURCE_DIR}/core/analysis/corpus_state.cpp
    ${PROJECT_SOURCE_DIR}/core/analysis/exact_sum.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/safetensors.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/npy.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/json_text.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/input_file.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/atomic_file.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/output_folder.cpp
    ${PROJECT_SOURCE_DIR}/core/config/config.cpp
    ${PROJECT_SOURCE_DIR}/core/config/config_sections.cpp
    ${PROJECT_SOURCE_DIR}/core/config/stack_kind.cpp
    ${PROJECT_SOURCE_DIR}/core/variants/seq2seq/seq2seq_config.cpp
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
    ${PROJECT_SOURCE_DIR}/core/formats/hf/sentencepiece_model.cpp
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
    ${PROJECT_SOURCE_DIR}/core/formats/hf/hf_llama.cpp
    ${PROJECT_SOURCE_DIR}/core/formats/workspace_file.cpp
    ${PROJECT_SOURCE_DIR}/core/input/image_header.cpp
    ${ATLAS_VARIANT_CONFIG_SOURCES}
    ${ATLAS_CONFIG_SECTIONS_LIST}
    ${ATLAS_VARIANT_CHOICES_LIST}
)
