// What a file given as a checkpoint is when it is not one, and the command
// that converts it.
//
// Every command that opens a model opens it through Checkpoint::open
// (models/checkpoint.h), which asks here first. A user's first try is often
// the file their training code wrote; the error then names what that file is
// and the converter command that takes it (docs/BAD_INPUT.md, "Files that are
// not a checkpoint"):
//
//   a folder with config.json       a Hugging Face model folder  -> --from hf-gpt2 FOLDER
//   "24ka" + version 1 / 2          llama2.c export.py's model.bin (v1 float32, v2 int8)
//   7 int32 whose sizes add up to   llama2.c's legacy (v0) model.bin -> --from llama2c-bin
//     exactly the file's length
//   a torch.save zip or a pickle    by the names it holds: nanoGPT's or llama2.c's ckpt.pt
//                                   (model_args), an Annotated Transformer or GPT
//                                   state_dict, nanoGPT's meta.pkl
//   int32 max_token_length, then    llama2.c's tokenizer.bin (a vocabulary: --tokenizer)
//     (score, length, bytes) pieces
//     ending exactly at the end
//   \x89PNG\r\n\x1a\n               a PNG picture
//   0 bytes                         an empty file
//   safetensors without "config"    a Hugging Face model.safetensors (by its tensor names)
//
// Recognition reads at most kSniffBytes from the start of the file (a torch
// file: at most kTorchSniffBytes), never more than the file holds, and trusts
// no length the file claims: a llama2.c header's sizes are only believed when
// they add up to exactly the file's size. A file that could be safetensors
// (could_be_safetensors) is always left to the safetensors reader.
#pragma once

#include "engine/io/safetensors.h"

#include <string>

namespace tinyformer {

// How many first bytes of a torch.save file are searched for the names that
// tell which family wrote it (its data.pkl is the zip's first member; the
// names of a 100-layer state_dict fit in far less).
constexpr uint64_t kTorchSniffBytes = 1 << 20;

// Throws Error naming what `path` is, and the command that converts it, when
// it is a model file of another kind (the table above); returns when it may
// be safetensors or is nothing recognised (the safetensors reader then names
// what is wrong with it).
void refuse_other_model_files(const std::string& path);

// Throws Error for a safetensors file without tinyformer's "config" metadata,
// naming it as a Hugging Face model.safetensors when its tensor names are
// Hugging Face's, with the converter command.
[[noreturn]] void refuse_safetensors_without_config(const std::string& path, const SafetensorsFile& file);

// `text` as one word for /bin/sh: as is when it holds only letters, digits
// and _ . / - + : , @ =, else in single quotes.
std::string shell_word(const std::string& text);

}  // namespace tinyformer
