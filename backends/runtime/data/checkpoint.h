// Checkpoints: `save(model, path)` and `load(path, like)` of any value made of tensors
// (models, records, tuples), written atomically (files.h) and checked on load.
//
// File layout (integers little-endian):
//   0   magic "SPORACKP"          8 bytes
//   8   version (1)               u32
//   12  header length H           u32
//   16  data length D             u64
//   24  CRC32 of bytes 0..23      u32   (a damaged length field is reported as corruption)
//   28  header: H bytes of text, one line per tensor leaf in depth-first order:
//         <path> <dtype> <dims, comma-separated or "-" for a scalar> <offset> <bytes>
//       (paths are field names and tuple indices joined by '.', `l1.w`, `1.momentum.l1.b`; a
//       bare tensor is `value`)
//   28+H  data: the leaves' bytes, row-major, each at its offset (64-byte aligned)
//   end-4 CRC32 of every byte before it   u32
//
// Loading checks, in order, and fails with a UserError that names the file and what is wrong:
// existence, size and magic ("not a Spora checkpoint"), version, the prefix CRC, the size the
// header announces ("truncated: 812 bytes, the header announces 3216"), the whole-file CRC
// ("checksum mismatch: the file is corrupt"), the header text, then the structure against
// `like`: "checkpoint 'mlp.ckpt': field l1.w has shape f32[784,256], the model expects
// f32[784,512]", a field the model has and the file lacks, or one the file has and the model
// lacks.
#pragma once

#include <string>

#include "semantics/value.h"

namespace spora::runtime::data {

std::string checkpoint_bytes(const sem::Value& v, const std::string& path);
void save_checkpoint(const sem::Value& v, const std::string& path);
// A value of like's structure and types with the tensors of the file.
sem::Value load_checkpoint(const std::string& path, const sem::Value& like);
sem::Value parse_checkpoint(const std::string& bytes, const std::string& path, const sem::Value& like);

}  // namespace spora::runtime::data
