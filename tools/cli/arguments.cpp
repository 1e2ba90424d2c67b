#include "tools/cli/arguments.h"

#include "engine/io/output_file.h"

#include <charconv>

namespace tinyformer::cli {

ParsedArguments::ParsedArguments(const Arguments& args, const std::set<std::string>& value_flags,
                                 const std::set<std::string>& switches, const char* command)
    : command_(command) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--help" || arg == "-h") {
            help_ = true;
            continue;
        }
        if (arg == "--") {  // everything after is positional
            positional_.insert(positional_.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
            break;
        }
        if (arg.size() < 2 || arg[0] != '-' || arg[1] != '-') {
            positional_.push_back(arg);
            continue;
        }
        const size_t equals = arg.find('=');
        const std::string flag = arg.substr(0, equals);
        if (switches.count(flag)) {
            if (equals != std::string::npos) throw UsageError(std::string(command) + ": " + flag + " takes no value");
            values_[flag] = "";
        } else if (value_flags.count(flag)) {
            // A second value would silently replace the first (--block a --block b
            // would block b alone): lists are one comma-separated value.
            if (values_.count(flag))
                throw UsageError(std::string(command) + ": " + flag + " is given twice; give it once" +
                                 " (a list is one value: A,B)");
            if (equals != std::string::npos) {
                values_[flag] = arg.substr(equals + 1);
            } else {
                // "--output --attention" is a forgotten value, not a file named "--attention";
                // a value that starts with "--" can still be given as --flag=--value.
                if (i + 1 >= args.size() || args[i + 1].starts_with("--"))
                    throw UsageError(std::string(command) + ": " + flag + " needs a value");
                values_[flag] = args[++i];
            }
        } else {
            throw UsageError(std::string(command) + ": unknown option '" + flag + "' (see 'tinyformer " + command +
                             " --help')");
        }
    }
}

const std::string& ParsedArguments::value(const std::string& flag) const {
    auto found = values_.find(flag);
    if (found == values_.end()) throw UsageError(std::string(command_) + ": " + flag + " is required");
    return found->second;
}

std::string ParsedArguments::value_or(const std::string& flag, const std::string& fallback) const {
    return has(flag) ? value(flag) : fallback;
}

std::string ParsedArguments::output(const std::string& alias) const {
    if (has("--output") && has(alias))
        throw UsageError(std::string(command_) + ": give --output once (" + alias + " is another name for it)");
    const std::string value = has("--output") ? this->value("--output") : value_or(alias, "");
    if ((has("--output") || has(alias)) && value.empty())
        throw UsageError(std::string(command_) + ": --output needs a non-empty path");
    return value;
}

std::string ParsedArguments::picture_output(const std::string& alias) const {
    std::string path = output(alias);
    if (!path.empty() && !is_stream_output(path) && (!path.ends_with(".png") || path == ".png" || path.ends_with("/.png")))
        throw UsageError(std::string(command_) + ": the picture path '" + path +
                         "' does not end in .png; tinyformer writes PNG pictures, name them NAME.png");
    return path;
}

int64_t ParsedArguments::integer(const std::string& flag, int64_t fallback, int64_t min, int64_t max) const {
    if (!has(flag)) return fallback;
    const std::string& text = value(flag);
    int64_t number = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size())
        throw UsageError(std::string(command_) + ": " + flag + " needs an integer, got '" + text + "'");
    if (number < min || number > max)
        throw UsageError(std::string(command_) + ": " + flag + " must be in " + std::to_string(min) + ".." +
                         std::to_string(max) + ", got " + text);
    return number;
}

}  // namespace tinyformer::cli
