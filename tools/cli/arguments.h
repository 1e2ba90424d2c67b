// A small command-line parser for subcommands: positional arguments and
// --flags (with or without a value). Anything unexpected is a UsageError
// (exit 2) naming the flag.
#pragma once

#include "tools/cli/cli.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace tinyformer::cli {

class ParsedArguments {
public:
    // value_flags take a value (--output FILE or --output=FILE); switches do not.
    ParsedArguments(const Arguments& args, const std::set<std::string>& value_flags,
                    const std::set<std::string>& switches, const char* command);

    const std::vector<std::string>& positional() const { return positional_; }
    bool has(const std::string& flag) const { return values_.count(flag) != 0; }
    const std::string& value(const std::string& flag) const;  // UsageError if absent
    std::string value_or(const std::string& flag, const std::string& fallback) const;
    int64_t integer(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const;
    bool help() const { return help_; }

    // The one output flag of attention, mask and probe: --output, or its old
    // name `alias` (--out, --png), not both. Empty when neither is given.
    std::string output(const std::string& alias) const;
    // output() for a picture: the path must end in ".png" (UsageError naming it).
    std::string picture_output(const std::string& alias) const;

private:
    const char* command_;
    std::vector<std::string> positional_;
    std::map<std::string, std::string> values_;
    bool help_ = false;
};

}  // namespace tinyformer::cli
