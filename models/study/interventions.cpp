#include "models/study/interventions.h"

#include "models/study/trace.h"

#include "engine/attention.h"
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


InterventionHooks::InterventionHooks(std::map<std::string, std::vector<MaskCell>> cells,
                                     std::map<std::string, std::vector<int64_t>> zeroed_heads, const Hooks* below)
    : zeroed_heads_(std::move(zeroed_heads)), below_(below) {
    for (auto& [call, list] : cells)
        if (!list.empty()) cells_[call] = std::move(list);  // a call without cells keeps its mask as it is
}

std::optional<Mask> InterventionHooks::attention_mask(const AttentionCallInfo& call, const Mask& mask) const {
    std::optional<Mask> below = below_ ? below_->attention_mask(call, mask) : std::nullopt;
    const auto found = cells_.find(call.name);
    if (found == cells_.end()) return below;
    std::vector<MaskCell> inside;  // in this call's [L, S] rows and columns
    for (const MaskCell& cell : found->second) {
        const int64_t row = cell.query - call.first;
        if (row >= 0 && row < call.queries && cell.key < call.keys) {
            inside.push_back({row, cell.key, cell.allowed});
        } else if (call.whole_pass) {
            fail("the mask override [", cell.query, ", ", cell.key, "] is outside this call's [L,S] = [", call.queries,
                 ",", call.keys, "]");
        }  // a decoding step: that query is another step's, or that key does not exist yet
    }
    return (below ? *below : mask).with_cells(call.batch, call.queries, call.keys, inside);
}

void InterventionHooks::attention_heads(const AttentionCallInfo& call, Tensor& z) const {
    if (below_) below_->attention_heads(call, z);
    const auto found = zeroed_heads_.find(call.name);
    if (found == zeroed_heads_.end()) return;
    for (int64_t head : found->second)  // the head's columns of Concat(heads) [B, L, D]
        for (int64_t b = 0; b < z.dim(0); ++b) {
            const MatrixView columns = merge_heads(z, call.heads, b, head);  // [L, Dh]
            for (int64_t l = 0; l < columns.rows; ++l) std::fill(columns.row(l), columns.row(l) + columns.cols, 0.0f);
        }
}

void InterventionHooks::residual(const ResidualPoint& point, Tensor& x) const {
    if (below_) below_->residual(point, x);
}

namespace {

// The hooks of `interventions`, every name, cell and head checked first.
InterventionHooks checked_hooks(Model& model, const Interventions& interventions) {
    const std::vector<std::string> calls = model.attention_names();
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
    std::map<std::string, std::vector<MaskCell>> cells;
    std::map<std::string, std::vector<int64_t>> zeroed;
    for (const auto& [call, call_cells] : interventions.mask_overrides) {
        module_of(call);
        for (const MaskCell& cell : call_cells)
            if (cell.query < 0 || cell.key < 0)
                fail("interventions: ", call, ": a mask override's query and key must be >= 0, got [", cell.query,
                     ", ", cell.key, "]");
        std::vector<MaskCell>& list = cells[call];
        list.insert(list.end(), call_cells.begin(), call_cells.end());
    }
    for (const auto& [call, head] : interventions.ablate) {
        const MultiHeadAttention& module = module_of(call);
        if (head < 0 || head >= module.heads())
            fail("interventions: ", call, " has heads 0..", module.heads() - 1, "; cannot ablate head ", head);
        std::vector<int64_t>& heads = zeroed[call];
        if (std::find(heads.begin(), heads.end(), head) == heads.end()) heads.push_back(head);
    }
    return InterventionHooks(std::move(cells), std::move(zeroed));
}

}  // namespace

AppliedInterventions::AppliedInterventions(Model& model, const Interventions& interventions)
    : hooks_(checked_hooks(model, interventions)), scope_(model, &hooks_) {}

}  // namespace tinyformer
