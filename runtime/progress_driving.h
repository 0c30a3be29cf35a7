// What the progress engine's files share about who drives it: the engine runs turns on its
// progress thread or on a caller's thread that waits (driveUntilDone), never on two at once.
#pragma once

namespace tsr::runtime {

// Set while this thread drives (runs turns): driving again from inside a turn (a task's code
// waiting) would re-lock the engine's drive mutex.
inline thread_local bool tDriving = false;

struct DrivingScope {
  bool was = tDriving;
  DrivingScope() { tDriving = true; }
  ~DrivingScope() { tDriving = was; }
};

// Longest sleep on the transport's events while a collective is pending (TSR_WAIT=sleep):
// bounds what a missed wake-up costs, and how late timeouts and watches are looked at.
inline constexpr int kWaitSliceMs = 1;

}  // namespace tsr::runtime
