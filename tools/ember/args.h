// A small argument parser for the subcommands: flags with values, switches
// and positionals, with errors that name the flag and the value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember::cli {

class Args {
 public:
  // `with_value`: flags that take a value ("-m", "--ctx"); anything else
  // starting with '-' is a switch.
  Args(int argc, char** argv, std::vector<std::string> with_value);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  bool has(const std::string& flag) const;
  std::string get(const std::string& flag, const std::string& fallback = "") const;
  // Every value of a flag given more than once (--stop A --stop B), in order.
  std::vector<std::string> get_all(const std::string& flag) const;
  // Numeric values; on a malformed or out-of-range value sets error().
  int64_t get_int(const std::string& flag, int64_t fallback, int64_t min, int64_t max);
  double get_float(const std::string& flag, double fallback, double min, double max);
  const std::vector<std::string>& positionals() const { return positionals_; }
  // Flags given that are not in `known`: reported as an error.
  bool check_known(const std::vector<std::string>& known);

 private:
  std::vector<std::pair<std::string, std::string>> flags_;
  std::vector<std::string> positionals_;
  std::string error_;
};

// Commands run in three steps: parse (argv into a request: help printed or
// an argument refused ends it here), run (the work, printing nothing but
// progress), report (what the user reads). A parse step returns kRun to go
// on, else the exit code.
constexpr int kRun = -1;

// Prints "STATUS_NAME: message" on stderr and returns the exit code 1.
int report(int status, const std::string& message);
// The same, from the C API's last error.
int report_last(int status);

}  // namespace ember::cli
