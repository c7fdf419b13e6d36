# The tokenizer layer (src/tokenizer, the library kipp_tokenizer), and its one dependency: utf8proc
# for NFC data, combining classes and general categories (docs/TOKENIZER.md, "Unicode versions").
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
target_sources(kipp_tokenizer PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/unicode_tables.cpp
  ${CMAKE_CURRENT_LIST_DIR}/char_table.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nfc.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pretokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/byte_level.cpp
  ${CMAKE_CURRENT_LIST_DIR}/merge_table.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bpe.cpp
  ${CMAKE_CURRENT_LIST_DIR}/word_cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/vocab_index.cpp
  ${CMAKE_CURRENT_LIST_DIR}/added_tokens.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tokenizer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/stream_decoder.cpp
)
target_link_libraries(kipp_tokenizer PRIVATE PkgConfig::UTF8PROC)
