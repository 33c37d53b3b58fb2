// A validating scan of a request body as JSON, before anything is parsed
// into memory: the whole grammar (RFC 8259, strict: no comments, no trailing
// commas, UTF-8 checked, \u surrogates paired), with the nesting depth and
// the length of a number bounded. It allocates nothing and reads each byte
// once.
//
// Why a scan of our own in front of nlohmann-json: nlohmann's lexer, on an
// invalid token, copies that token into its error message two or three
// times (an 8 MiB string with a bad byte at its end costs ~5x the body), and
// its DOM builds 16 to 100 bytes per element; `ember serve` reads bodies
// with nlohmann's SAX interface (request_reader.cpp), which sees only text
// this scan has accepted.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ember::serve {

struct JsonLimits {
  size_t max_depth = 64;         // arrays and objects nested
  size_t max_number_chars = 64;  // one number's characters
};

struct JsonCheck {
  bool ok = true;
  size_t offset = 0;  // of the first byte that is wrong (or the end)
  std::string what;   // why, without quoting the input
};

JsonCheck check_json(std::string_view text, const JsonLimits& limits);

}  // namespace ember::serve
