# One layering check (tests/layering/CMakeLists.txt): compiles SOURCE with
# a layer's include folders (INCLUDES, '|'-separated) and
#   EXPECT=pass     must compile;
#   EXPECT=missing  must fail, and fail because MISSING was not found (not
#                   for any other error, which would prove nothing).
# Usage: cmake -DCOMPILER=... -DSTD=20 -DINCLUDES=a|b -DSOURCE=f.cpp
#              -DEXPECT=pass|missing [-DMISSING=model/model.h] -P check_include.cmake
string(REPLACE "|" ";" dirs "${INCLUDES}")
set(flags "")
foreach(d IN LISTS dirs)
  if(d)
    list(APPEND flags "-I${d}")
  endif()
endforeach()
execute_process(COMMAND ${COMPILER} -std=c++${STD} -fsyntax-only ${flags} ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} should compile with these include folders but does not:\n${out}")
  endif()
  message(STATUS "${SOURCE}: compiles, as it should")
elseif(EXPECT STREQUAL "missing")
  if(rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} includes ${MISSING}, which this layer must not see, yet it compiles")
  endif()
  # gcc: "model/model.h: No such file or directory"; clang: "'model/model.h' file not found".
  string(REPLACE "." "\\." missing_re "${MISSING}")
  if(NOT out MATCHES "${missing_re}'?:? (No such file or directory|file not found)")
    message(FATAL_ERROR "${SOURCE} failed, but not because ${MISSING} is out of reach:\n${out}")
  endif()
  message(STATUS "${SOURCE}: ${MISSING} not found, as it should be")
else()
  message(FATAL_ERROR "EXPECT must be pass or missing, not '${EXPECT}'")
endif()
