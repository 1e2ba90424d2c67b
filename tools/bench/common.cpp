#include "tools/bench/bench.h"

#include "engine/cpu/blas.h"
#include "engine/matmul.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <fstream>

namespace tinyformer::bench {

std::string cpu_model() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("model name", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const size_t start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? std::string("(empty model name)") : line.substr(start);
    }
    return "unknown (no \"model name\" in /proc/cpuinfo)";
}

std::string blas_line() {
    static const BlasReport report = blas_report();  // the core cannot change while the process runs
    return "BLAS: " + report.config + "; core in use " + report.core_in_use + " (OpenBLAS chose " +
           report.chosen_core + "; " + blas_reason_name(report.reason) + "); " + std::to_string(blas_threads()) +
           " thread(s)";
}

void Table::print_header() const {
    std::vector<std::string> titles;
    size_t total_width = 0;
    for (const Column& column : columns_) {
        titles.push_back(column.title);
        total_width += static_cast<size_t>(column.width) + 2;
    }
    print_row(titles);
    std::printf("%s\n", std::string(total_width - 2, '-').c_str());
}

void Table::print_row(const std::vector<std::string>& cells) const {
    std::string line;
    for (size_t i = 0; i < columns_.size(); ++i) {
        const Column& column = columns_[i];
        const std::string& cell = i < cells.size() ? cells[i] : std::string();
        const size_t pad = cell.size() < static_cast<size_t>(column.width) ? column.width - cell.size() : 0;
        if (i > 0) line += "  ";
        if (column.align == Align::Right) line.append(pad, ' ');
        line += cell;
        if (column.align == Align::Left && i + 1 < columns_.size()) line.append(pad, ' ');
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

namespace {

std::string directory_of(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace

std::optional<std::string> find_tool_script(const std::string& name) {
    std::vector<std::string> candidates;
    char executable[4096];
    const ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
    if (length > 0) {
        executable[length] = '\0';
        candidates.push_back(directory_of(executable) + "/../tools/bench/" + name);
    }
    candidates.push_back("tools/bench/" + name);
    for (const std::string& candidate : candidates)
        if (access(candidate.c_str(), R_OK) == 0 && candidate.find('\'') == std::string::npos) return candidate;
    return std::nullopt;
}

bool torch_importable() {
    const std::string command = std::string(kPython) + " -c 'import torch' >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
}

std::vector<std::string> run_python_tool(const std::string& script, const std::string& arguments) {
    std::vector<std::string> lines;
    const std::string command = std::string(kPython) + " '" + script + "' " + arguments + " 2>&1";
    std::FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return lines;
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe)) {
        std::string line = buffer;
        if (!line.empty() && line.back() == '\n') line.pop_back();
        lines.push_back(line);
    }
    pclose(pipe);
    return lines;
}

}  // namespace tinyformer::bench
