// Building compressors from string parameters (BytePS compression's registry;
// docs/compressed.md, "The compressor framework").
//
// Keys (all values are strings):
//   compressor          onebit | topk | randomk | dithering | fp16 | bf16 | none   (required)
//   k                   topk, randomk: a count ("100", clamped to the tensor size) or a ratio
//                       in (0, 1) written with a '.' ("0.01" -> max(1, ceil(0.01 * count)));
//                       dithering: the number of levels s (linear 1..32767, natural 1..15).
//                       Required for topk, randomk, dithering; rejected for the others.
//   scaling             onebit only: true | false (default false): scale by mean |g|.
//   scale_block         onebit only: 0 (default: one scale) or a multiple of 64, one mean |g|
//                       per block of that many elements (scaling=false has no scale: ignored).
//   dithering_partition dithering only: linear | natural (default linear).
//   dithering_normalize dithering only: max | l2 (default max).
//   ef                  vanilla | none (default none): ErrorFeedback decorator.
//   momentum            nesterov | none (default none): NesterovMomentum decorator.
//   momentum_mu         momentum=nesterov only: a float in [0, 1) (default 0.9).
//   seed                unsigned 64-bit integer (default 0): keys every random draw.
// Decorators nest as BytePS does: momentum(ef(compressor)).
// An unknown key, a missing required key, a key that does not apply to the chosen compressor,
// or a bad value gives Code::kInvalidArgument with a message naming the key, the value and the
// accepted values.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/compress/compressor.h"

namespace tsr::compress {

using Params = std::map<std::string, std::string>;

// A compressor for tensors of `count` f32 elements.
Result<std::unique_ptr<Compressor>> createCompressor(const Params& params, size_t count);

// `params` completed from the environment: TSR_COMPRESS_<KEY>=value (KEY in upper case, e.g.
// TSR_COMPRESS_COMPRESSOR=topk, TSR_COMPRESS_K=0.01) supplies key <key> when params lack it;
// explicit parameters win. A TSR_COMPRESS_ variable that names no key is an error naming the
// variable. The second form reads the process environment.
Result<Params> withEnvironmentDefaults(const Params& params, const std::map<std::string, std::string>& env);
Result<Params> withEnvironmentDefaults(const Params& params);

// `st` (an error of createCompressor over `completed`) with the environment variable named
// when the value it names came from one: "... (from TSR_COMPRESS_SEED=-1)".
Status nameEnvironmentSource(const Status& st, const Params& given, const Params& completed);

// The TSR_COMPRESS_* variables of `env` checked together, as createCompressor would check them
// once a trainer's parameters are completed from them (for tsr-info -s). Without
// TSR_COMPRESS_COMPRESSOR the trainer names the compressor: they pass when one compressor takes
// them all (a required k or momentum=nesterov is assumed given). The error names the variable.
Status checkEnvironment(const std::map<std::string, std::string>& env);

// The keys createCompressor accepts (callers that mix compressor keys with other settings can
// split a parameter map with this list).
const std::vector<std::string>& compressorKeys();

}  // namespace tsr::compress
