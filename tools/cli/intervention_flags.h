// The intervention flags `forward`, `trace`, `run`, `explore` and `attention`
// share (models/study/interventions.h, docs/FORMAT.md section 4b):
//   --overrides FILE.json         {"mask_overrides": {...}, "ablate": [...]}
//   --block CALL:Q:K[,CALL:Q:K]   query Q may not attend key K in call CALL
//   --allow CALL:Q:K[,CALL:Q:K]   query Q may attend key K in call CALL
//   --ablate CALL:H[,CALL:H]      head H of call CALL outputs 0
// CALL is a trace name (encoder.0.self_attn, decoder.1.cross_attn,
// layers.2.self_attn). The flags add to the file's cells, after them (so a
// flag's cell wins over the file's for the same cell), --block before --allow.
// Usage errors (exit 2): a flag value that is not CALL:Q:K / CALL:H with
// whole numbers >= 0. The file's content, an unknown call or head: Error (exit 1).
#pragma once

#include "models/study/interventions.h"
#include "tools/cli/arguments.h"

#include <set>
#include <string>

namespace tinyformer::cli {

// The flags above, for ParsedArguments' value flags.
const std::set<std::string>& intervention_flag_names();

// The help lines of the flags above, for a command's --help.
extern const char* kInterventionFlagsHelp;

// The file's interventions (if --overrides is given) and the flags'. `command` names the command in errors.
Interventions intervention_flags(const ParsedArguments& parsed, const char* command);

// An overrides file read under limits: a regular file (a FIFO or a device is
// refused) of at most kMaxOverridesBytes, JSON nested at most 3 deep.
constexpr uint64_t kMaxOverridesBytes = uint64_t{1} << 20;
Interventions read_overrides_file(const std::string& path);

}  // namespace tinyformer::cli
