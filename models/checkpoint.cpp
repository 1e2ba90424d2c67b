#include "models/checkpoint.h"

#include "engine/json.h"

#include <cmath>

namespace tinyformer {

Checkpoint Checkpoint::open(const std::string& path) {
    Checkpoint checkpoint;
    checkpoint.file_ = SafetensorsFile::read(path);
    const auto& metadata = checkpoint.file_.metadata();
    auto config = metadata.find("config");
    if (config == metadata.end())
        fail(path, ": __metadata__ has no \"config\"; a tinyformer checkpoint stores its config there (docs/FORMAT.md)");
    try {
        checkpoint.config_ = parse_config(config->second);
    } catch (const Error& error) {
        fail(path, ": ", error.what());
    }
    auto vocab = metadata.find("vocab");
    if (vocab != metadata.end()) {
        const nlohmann::json tokens = parse_json(vocab->second, /*max_depth=*/1, path + ": __metadata__ \"vocab\"");
        if (!tokens.is_array())
            fail(path, ": __metadata__ \"vocab\" must be a JSON array of strings");
        for (const auto& token : tokens) {
            if (!token.is_string()) fail(path, ": __metadata__ \"vocab\" holds a non-string: ", json_excerpt(token));
            checkpoint.vocab_.push_back(token.get<std::string>());
        }
    }
    return checkpoint;
}

Tensor Checkpoint::take(const std::string& name, const Shape& expected) {
    if (!file_.contains(name))
        fail(file_.path(), ": missing tensor '", name, "' (expected F32 ", shape_string(expected), ")");
    const StoredTensor& stored = file_.info(name);
    if (stored.shape != expected)
        fail(file_.path(), ": tensor '", name, "' has shape ", shape_string(stored.shape), "; expected ",
             shape_string(expected));
    Tensor tensor = file_.read_float(name);
    for (int64_t i = 0; i < tensor.numel(); ++i)
        if (!std::isfinite(tensor.data()[i]))
            fail(file_.path(), ": tensor '", name, "' holds a non-finite value (",
                 std::isnan(tensor.data()[i]) ? "NaN" : tensor.data()[i] > 0 ? "inf" : "-inf", ") at flat index ", i);
    taken_.insert(name);
    return tensor;
}

void Checkpoint::refuse_unknown() const {
    for (const auto& [name, stored] : file_.tensors())
        if (!taken_.count(name))
            fail(file_.path(), ": unknown tensor '", name, "' ", shape_string(stored.shape),
                 " (not used by the ", architecture_name(config_.arch), " model that this config describes)");
}

}  // namespace tinyformer
