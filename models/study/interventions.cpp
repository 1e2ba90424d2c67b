#include "models/study/interventions.h"

#include "models/study/trace.h"

#include "engine/io/json.h"

#include <algorithm>
#include <set>

namespace tinyformer {

namespace {

// A whole number >= 0 (and below 2^62, so that a slot minus a first slot cannot overflow).
int64_t index_value(const nlohmann::json& value, const std::string& what, const std::string& where,
                    const char* name) {
    constexpr int64_t kLimit = int64_t{1} << 62;
    if (value.is_number_unsigned() && value.get<uint64_t>() < static_cast<uint64_t>(kLimit))
        return static_cast<int64_t>(value.get<uint64_t>());
    // A JSON value built in C++ from an int is a signed integer, however positive.
    if (value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() < kLimit) return value.get<int64_t>();
    if (value.is_number_integer() && value.get<int64_t>() < 0)
        fail(what, ": ", where, ": the ", name, " must be >= 0, got ", value.get<int64_t>());
    fail(what, ": ", where, ": the ", name, " must be a whole number >= 0, got ", json_excerpt(value));
}

bool allowed_value(const nlohmann::json& value, const std::string& what, const std::string& where) {
    if (value.is_boolean()) return value.get<bool>();
    if (value.is_number_integer() && (value == 0 || value == 1)) return value == 1;
    fail(what, ": ", where, ": allowed must be 0, 1, false or true, got ", json_excerpt(value));
}

std::string quoted(const std::string& key) { return "\"" + key + "\""; }

}  // namespace

Interventions parse_interventions(const nlohmann::json& value, const std::string& what) {
    if (!value.is_object()) fail(what, ": interventions must be a JSON object, got ", json_excerpt(value));
    Interventions interventions;
    if (const auto overrides = value.find("mask_overrides"); overrides != value.end()) {
        if (!overrides->is_object())
            fail(what, ": mask_overrides must be an object {\"call\": [[query, key, allowed], ...]}, got ",
                 json_excerpt(*overrides));
        for (const auto& [call, cells] : overrides->items()) {
            const std::string at = "mask_overrides[" + quoted(call) + "]";
            if (!cells.is_array()) fail(what, ": ", at, " must be a list of [query, key, allowed], got ", json_excerpt(cells));
            std::vector<MaskCell>& list = interventions.mask_overrides[call];
            for (size_t i = 0; i < cells.size(); ++i) {
                const nlohmann::json& cell = cells[i];
                const std::string where = at + "[" + std::to_string(i) + "]";
                if (!cell.is_array() || cell.size() != 3)
                    fail(what, ": ", where, " must be [query, key, allowed], got ", json_excerpt(cell));
                list.push_back({index_value(cell[0], what, where, "query"), index_value(cell[1], what, where, "key"),
                                allowed_value(cell[2], what, where)});
            }
        }
    }
    if (const auto ablate = value.find("ablate"); ablate != value.end()) {
        if (!ablate->is_array()) fail(what, ": ablate must be a list of [call, head], got ", json_excerpt(*ablate));
        for (size_t i = 0; i < ablate->size(); ++i) {
            const nlohmann::json& pair = (*ablate)[i];
            const std::string where = "ablate[" + std::to_string(i) + "]";
            if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string())
                fail(what, ": ", where, " must be [\"call\", head], got ", json_excerpt(pair));
            interventions.ablate.emplace_back(pair[0].get<std::string>(), index_value(pair[1], what, where, "head"));
        }
    }
    return interventions;
}

nlohmann::json interventions_json(const Interventions& interventions) {
    nlohmann::json overrides = nlohmann::json::object(), ablate = nlohmann::json::array();
    for (const auto& [call, cells] : interventions.mask_overrides)
        for (const MaskCell& cell : cells) overrides[call].push_back({cell.query, cell.key, cell.allowed ? 1 : 0});
    for (const auto& [call, head] : interventions.ablate) ablate.push_back({call, head});
    return {{"mask_overrides", overrides}, {"ablate", ablate}};
}

Interventions parse_interventions_file(const nlohmann::json& value, const std::string& what) {
    if (!value.is_object()) fail(what, ": interventions must be a JSON object, got ", json_excerpt(value));
    for (const auto& [key, ignored] : value.items())
        if (key != "mask_overrides" && key != "ablate")
            fail(what, ": unknown key ", json_excerpt(nlohmann::json(key)), "; the keys are mask_overrides and ablate");
    return parse_interventions(value, what);
}

std::vector<std::string> attention_call_names(const Model& model) { return model.attention_names(); }

AppliedInterventions::AppliedInterventions(Model& model, const Interventions& interventions) {
    const std::vector<std::string> calls = attention_call_names(model);
    const std::set<std::string> known(calls.begin(), calls.end());
    auto module_of = [&](const std::string& call) -> MultiHeadAttention& {
        if (!known.count(call)) {
            std::string list;
            for (const std::string& each : calls) list.append(list.empty() ? "" : ", ").append(each);
            fail("interventions: no attention call named ", json_excerpt(nlohmann::json(call)), "; this model's are ",
                 list);
        }
        return model.attention_module(call);
    };
    // Everything is checked before any module changes.
    std::map<MultiHeadAttention*, std::vector<MaskCell>> overrides;
    std::map<MultiHeadAttention*, std::vector<int64_t>> zeroed;
    for (const auto& [call, cells] : interventions.mask_overrides) {
        MultiHeadAttention& module = module_of(call);
        for (const MaskCell& cell : cells)
            if (cell.query < 0 || cell.key < 0)
                fail("interventions: ", call, ": a mask override's query and key must be >= 0, got [", cell.query,
                     ", ", cell.key, "]");
        std::vector<MaskCell>& list = overrides[&module];
        list.insert(list.end(), cells.begin(), cells.end());
    }
    for (const auto& [call, head] : interventions.ablate) {
        MultiHeadAttention& module = module_of(call);
        if (head < 0 || head >= module.heads())
            fail("interventions: ", call, " has heads 0..", module.heads() - 1, "; cannot ablate head ", head);
        std::vector<int64_t>& heads = zeroed[&module];
        if (std::find(heads.begin(), heads.end(), head) == heads.end()) heads.push_back(head);
    }
    for (const std::string& call : calls) {
        MultiHeadAttention& module = model.attention_module(call);
        saved_.push_back({&module, module.mask_overrides(), module.zeroed_heads()});
    }
    try {
        for (const Saved& saved : saved_) {
            MultiHeadAttention& module = *saved.module;
            const auto cells = overrides.find(&module);
            const auto heads = zeroed.find(&module);
            module.set_mask_overrides(cells == overrides.end() ? std::vector<MaskCell>{} : cells->second);
            module.set_zeroed_heads(heads == zeroed.end() ? std::vector<int64_t>{} : heads->second);
        }
    } catch (...) {
        restore();
        throw;
    }
}

AppliedInterventions::~AppliedInterventions() { restore(); }

void AppliedInterventions::restore() noexcept {
    for (Saved& saved : saved_) {
        saved.module->set_mask_overrides(std::move(saved.overrides));  // valid: the module held them before
        saved.module->set_zeroed_heads(std::move(saved.zeroed_heads));
    }
    saved_.clear();
}

}  // namespace tinyformer
