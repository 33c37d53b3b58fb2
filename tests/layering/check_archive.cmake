# libember.a holds no conversion-only code (docs/decisions.md "Layers"): no
# defined symbol of the GGUF reader, vocabulary import, the .ember writer or
# signing, and no reference to mbedTLS's signing or key generation.
# Usage: cmake -DNM=nm -DARCHIVE=libember.a -P check_archive.cmake
execute_process(COMMAND ${NM} ${ARCHIVE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${ARCHIVE} failed: ${err}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(bad "")
foreach(line IN LISTS lines)
  if(line MATCHES " [TWVBDR] .*([Gg]guf|vocab_from_|write_model|serialize_model|sign_hash|generate_key_pair|make_signature_trailer)"
     OR line MATCHES " U (mbedtls_pk_sign|mbedtls_ecp_gen_key|mbedtls_ctr_drbg_seed)$")
    list(APPEND bad "${line}")
  endif()
endforeach()
if(bad)
  list(JOIN bad "\n" bad)
  message(FATAL_ERROR "libember.a holds conversion-only code:\n${bad}")
endif()
string(LENGTH "${out}" n)
if(n LESS 1000)
  message(FATAL_ERROR "${NM} listed almost nothing for ${ARCHIVE}: is it the library?")
endif()
message(STATUS "${ARCHIVE}: no conversion-only symbols")
