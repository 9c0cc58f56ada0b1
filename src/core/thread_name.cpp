#include "core/thread_name.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace voxrt {

void name_this_thread(const char* name) {
  // pthread_setname_np refuses names over 15 characters; cut them rather than lose the name.
  const std::string cut(name, std::min<std::size_t>(std::strlen(name), 15));
  (void)pthread_setname_np(pthread_self(), cut.c_str());
}

}  // namespace voxrt
