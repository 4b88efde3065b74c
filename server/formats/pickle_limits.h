// File: pickle_limits.h
// The bounds a pickle is parsed within (a hostile file meets them first).
// Its own file so ParsePickle (pickle_reader.h) and the unpickler behind it
// share it without including each other.
#pragma once

#include <cstdint>

namespace dflash::formats {

struct PickleLimits {
  int max_depth = 1000;                  // nesting of containers
  int64_t max_container_size = 1 << 24;  // items of one list/tuple/dict
  int64_t max_memo_size = 1 << 22;       // memo entries
  int64_t max_stack_size = 1 << 24;      // stack plus mark stack
};

}  // namespace dflash::formats
