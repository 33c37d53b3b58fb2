#include "platforms/linux/mapping_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace ember {
namespace {

// Fixed slots read by the signal handler without locks: a slot is published
// by storing `end` last and retired by clearing `end` first.
constexpr int kSlots = 64;
struct Slot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> faulted{false};
};
Slot g_slots[kSlots];
std::mutex g_mutex;  // registration only, never taken in the handler
bool g_installed = false;
struct sigaction g_previous;

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    const uintptr_t end = s.end.load(std::memory_order_acquire);
    if (end == 0 || addr < s.begin.load(std::memory_order_relaxed) || addr >= end) continue;
    // mmap is a plain system call on Linux, safe here in practice (POSIX does
    // not list it as async-signal-safe). The page then reads as zeros.
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    void* at = reinterpret_cast<void*>(addr & ~(page - 1));
    if (mmap(at, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
      s.faulted.store(true, std::memory_order_release);
      return;  // the faulting load is retried and reads zeros
    }
    break;
  }
  // Not ours (or the page could not be replaced): what would have happened.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) {
      g_previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL);  // returning re-executes the access: the default action follows
}

}  // namespace

int register_mapping(const void* base, size_t size) {
  if (!base || size == 0) return -1;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_installed) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &g_previous) != 0) return -1;
    g_installed = true;
  }
  for (int i = 0; i < kSlots; ++i) {
    if (g_slots[i].end.load(std::memory_order_relaxed) != 0) continue;
    g_slots[i].faulted.store(false, std::memory_order_relaxed);
    g_slots[i].begin.store(reinterpret_cast<uintptr_t>(base), std::memory_order_relaxed);
    g_slots[i].end.store(reinterpret_cast<uintptr_t>(base) + size, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_mapping(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_slots[slot].end.store(0, std::memory_order_release);
  g_slots[slot].begin.store(0, std::memory_order_relaxed);
}

bool mapping_faulted(int slot) {
  return slot >= 0 && slot < kSlots && g_slots[slot].faulted.load(std::memory_order_acquire);
}

Result<FileIdentity> file_identity(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return Status::error(EMBER_ERR_IO, "cannot stat '%s': %s", path.c_str(), std::strerror(errno));
  }
  FileIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return id;
}

}  // namespace ember
