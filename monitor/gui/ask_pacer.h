// One question in flight per view (docs/design-notes.md, monitor/gui "Pacing"): a view asks through
// this, and a question wanted while one is on its way is not sent but noted, and asked once when
// that answer is back, however many were wanted meanwhile (the answer after that is for the view as
// it is then). Plain state on the GUI thread: the view still sends the question and takes the
// answer itself.
#pragma once

namespace memtap::gui {

class AskPacer {
 public:
  // Whether the view may send its question now: true marks it in flight; false (one is
  // already on its way) notes that the view is to ask again when that one is back.
  bool start() {
    if (in_flight_) {
      again_ = true;
      return false;
    }
    in_flight_ = true;
    return true;
  }

  // The question started was not sent after all (nothing to ask): nothing is in flight, and
  // nothing is owed (there was no answer to wait for).
  void cancel() { in_flight_ = again_ = false; }

  // The answer is back: nothing is in flight. True when a question was wanted meanwhile:
  // the view asks again (once; the note is cleared).
  [[nodiscard]] bool done() {
    in_flight_ = false;
    const bool again = again_;
    again_ = false;
    return again;
  }

  bool inFlight() const { return in_flight_; }

 private:
  bool in_flight_ = false;
  bool again_ = false;  // only while in flight: start() was refused since it was sent
};

}  // namespace memtap::gui
